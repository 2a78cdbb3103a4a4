// The body of one contract version's `rf-library` host interface: included by
// mod.rs once per version, with `wit` naming that version's bindings. Not a
// module of its own, so it has no inner docs; see mod.rs.

use super::*;
use wit::stephost::plugin::rf_library::{Host, LibraryError, LibraryServer};

impl Host for HostState {
    async fn start(
        &mut self,
        name: String,
        args: Vec<String>,
    ) -> Result<LibraryServer, LibraryError> {
        let session = self.session_processes();
        let grant = &self.grant.rf_libraries;
        if !grant.libraries.contains(&name) {
            return Err(LibraryError::NotGranted(not_granted(
                &self.plugin,
                &name,
                grant,
            )));
        }
        check_args(&format!("import arguments for library '{name}'"), &args)?;
        let gate = &mut self.http_gate;
        let servers = &mut self.rf_libraries.servers;
        servers.retain_mut(|s| {
            let alive = s.is_alive();
            if !alive {
                tracing::warn!(
                    library = s.name(),
                    stderr = %s.stderr(),
                    "an RF library server exited; a new one starts on next use"
                );
                gate.remove_scope(&s.addr().ip().to_string(), s.addr().port());
            }
            alive
        });
        if let Some(server) = servers.iter().find(|s| s.serves(&name, &args)) {
            return Ok(record(server));
        }
        if servers.len() >= MAX_SERVERS_PER_INSTANCE {
            return Err(LibraryError::Unavailable(format!(
                "this session already runs {MAX_SERVERS_PER_INSTANCE} library servers, the most one session may run"
            )));
        }
        if self.rf_libraries.started >= MAX_STARTS_PER_INSTANCE {
            return Err(LibraryError::Unavailable(format!(
                "this session has started {MAX_STARTS_PER_INSTANCE} library servers, the most one session may start; the ones that exited did so on their own (their stderr is in the host's log)"
            )));
        }
        self.rf_libraries.started += 1;
        let server =
            Server::start(grant, &name, &args, &self.services.host_owned, &session).await?;
        self.http_gate.add_scope(ScopedDestination {
            host: server.addr().ip().to_string(),
            port: server.addr().port(),
            prefix: server.prefix(),
            denied_segments: Vec::new(),
            vendor: &[],
            refused_routes: &[],
            send_keys: None,
        });
        tracing::info!(plugin = &*self.plugin, library = %name, addr = %server.addr(), "RF library server started");
        let info = record(&server);
        servers.push(server);
        Ok(info)
    }

    async fn granted(&mut self) -> Vec<String> {
        self.grant.rf_libraries.libraries.clone()
    }

    async fn load_variables(
        &mut self,
        path: String,
        args: Vec<String>,
    ) -> Result<String, LibraryError> {
        check_args(&format!("arguments for variable file '{path}'"), &args)?;
        let file = variable_file(&self.plugin, &path, &self.grant)
            .map_err(LibraryError::NotGranted)?;
        let Some(file) = file else {
            return Err(LibraryError::ImportFailed(format!(
                "Variable file '{path}' does not exist."
            )));
        };
        let session = self.session_processes();
        Ok(server::load_variables(&self.grant.rf_libraries, &file, &args, &session).await?)
    }
}

impl From<server::StartError> for LibraryError {
    fn from(error: server::StartError) -> Self {
        match error {
            server::StartError::Import(message) => Self::ImportFailed(message),
            other => Self::Unavailable(other.to_string()),
        }
    }
}

/// Import arguments go into the child's environment: bounded in count and
/// bytes before anything starts. `what` names them in the refusal.
fn check_args(what: &str, args: &[String]) -> Result<(), LibraryError> {
    if args.len() > MAX_ARGS || args.iter().map(String::len).sum::<usize>() > MAX_ARG_BYTES {
        return Err(LibraryError::Unavailable(format!(
            "too many {what} (at most {MAX_ARGS}, {MAX_ARG_BYTES} bytes together)"
        )));
    }
    Ok(())
}

fn record(server: &Server) -> LibraryServer {
    LibraryServer {
        url: server.url(),
        name: server.rf_name().to_owned(),
    }
}
