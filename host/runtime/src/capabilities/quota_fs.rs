//! `wasi:filesystem/types` for plugin instances: wasmtime-wasi's implementation,
//! with every call that can take disk in a read-write folder charged to the
//! tenant's [`super::DiskQuota`] before it is made.
//!
//! Charged: `write`, `set-size`, the streams of `write-via-stream` and
//! `append-via-stream` (each write, before it is started), `open-at` that
//! creates, `create-directory-at`, `symlink-at`, `link-at`. Released:
//! `unlink-file-at`, `remove-directory-at`, `open-at` that truncates, `set-size`
//! that shrinks, a destination `rename-at` replaces, and whatever a failed or
//! short write did not take. A charge past the quota fails with WASI's `quota`
//! error code (EDQUOT in the guest), on a stream as the stream's last-operation
//! error, which `filesystem-error-code` answers as `quota` (wasi-libc does not
//! ask, and says EIO: hence the count of refusals in the environment, below).
//!
//! Only descriptors with read-write permission are charged: every read-write
//! preopen of an instance is one of its tenant's granted folders, and below a
//! read-only one nothing can be written (wasmtime-wasi refuses first).
//!
//! `wasi:cli/environment` is wasmtime-wasi's too, plus the quota in the host's
//! words and the count of refused writes ([`super::disk_quota::ENV`]): WASI
//! carries no message, and wasi-libc reports a failed stream write as EIO.

use std::sync::Arc;

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::FsPerms;
use wasmtime_wasi::cli::WasiCliCtxView;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::cli::environment;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, DescriptorType, ErrorCode, HostDescriptor, HostDirectoryEntryStream, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, FsError, FsResult, OutputStream, Pollable, StreamError,
    StreamResult,
};

use super::disk_quota::{InstanceDisk, QuotaExceeded};

/// [`HasData`] for linking [`QuotaFsView`] as `wasi:filesystem/types`.
pub(crate) struct QuotaFs;

impl HasData for QuotaFs {
    type Data<'a> = QuotaFsView<'a>;
}

/// wasmtime-wasi's filesystem view, and the quota its writes are charged to
/// (`None`: nothing is charged, as for the describe probe).
pub(crate) struct QuotaFsView<'a> {
    pub(crate) inner: WasiFilesystemCtxView<'a>,
    pub(crate) quota: Option<&'a Arc<InstanceDisk>>,
}

/// Another handle to the same (borrowed) descriptor, for a look before the call
/// that consumes `fd`.
fn again(fd: &Resource<Descriptor>) -> Resource<Descriptor> {
    Resource::new_borrow(fd.rep())
}

fn refused(error: QuotaExceeded) -> FsError {
    tracing::debug!(%error, "refused a filesystem call");
    ErrorCode::Quota.into()
}

/// The size of an open file, as the quota counts it.
fn size_of(file: &std::fs::File) -> u64 {
    file.metadata().map_or(0, |m| m.len())
}

/// Settles a charge of `charged` bytes made for a change of a file that was
/// `before` bytes long and is now `after`: what was charged but not taken, and
/// whatever the change freed, goes back.
fn settle(quota: &InstanceDisk, charged: u64, before: u64, after: u64) {
    let grown = after.saturating_sub(before);
    let shrunk = before.saturating_sub(after);
    quota.release(charged.saturating_sub(grown).saturating_add(shrunk), 0);
}

/// Gives back the entry [`QuotaFsView::charge_entry`] charged when the call
/// that was to make it failed.
fn unless_made<T>(quota: Option<Arc<InstanceDisk>>, result: &FsResult<T>) {
    if let (Some(quota), Err(_)) = (quota, result) {
        quota.release(0, 1);
    }
}

/// What removing an entry frees: one file, and a regular file's bytes when it
/// was the last link to them (hard links share their bytes).
fn freed_by(stat: &types::DescriptorStat) -> (u64, u64) {
    let bytes = if stat.type_ == DescriptorType::RegularFile && stat.link_count <= 1 {
        stat.size
    } else {
        0
    };
    (bytes, 1)
}

impl QuotaFsView<'_> {
    /// The quota a change through `fd` is charged to: `None` when nothing is
    /// charged (no quota, a read-only descriptor, or one that does not exist,
    /// which the delegated call reports).
    fn quota_for(&self, fd: &Resource<Descriptor>) -> Option<Arc<InstanceDisk>> {
        let quota = self.quota?;
        let perms = match self.inner.table.get(fd).ok()? {
            Descriptor::File(f) => f.perms,
            Descriptor::Dir(d) => d.perms,
        };
        (perms == FsPerms::ReadWrite).then(|| quota.clone())
    }

    /// The open file behind `fd`, when it is one.
    fn file_of(&self, fd: &Resource<Descriptor>) -> Option<Arc<std::fs::File>> {
        match self.inner.table.get(fd).ok()? {
            Descriptor::File(f) => Some(f.file.clone()),
            Descriptor::Dir(_) => None,
        }
    }

    /// What is at `path` below directory `fd`, if anything (the link itself
    /// unless `follow`).
    async fn look(
        &mut self,
        fd: &Resource<Descriptor>,
        follow: bool,
        path: &str,
    ) -> Option<types::DescriptorStat> {
        let flags = if follow {
            PathFlags::SYMLINK_FOLLOW
        } else {
            PathFlags::empty()
        };
        HostDescriptor::stat_at(&mut self.inner, again(fd), flags, path.to_owned())
            .await
            .ok()
    }

    /// Charges the one new entry a call through directory `fd` is about to
    /// make; the quota charged, if any, for [`unless_made`].
    fn charge_entry(&self, fd: &Resource<Descriptor>) -> FsResult<Option<Arc<InstanceDisk>>> {
        let Some(quota) = self.quota_for(fd) else {
            return Ok(None);
        };
        quota.charge(0, 1).map_err(refused)?;
        Ok(Some(quota))
    }

    /// Wraps the output stream `stream` (just made for `fd`) so each write is
    /// charged; `position` is where it writes, `None` when it appends.
    fn charged_stream(
        &mut self,
        fd: &Resource<Descriptor>,
        stream: Resource<DynOutputStream>,
        position: Option<u64>,
    ) -> FsResult<Resource<DynOutputStream>> {
        let (Some(quota), Some(file)) = (self.quota_for(fd), self.file_of(fd)) else {
            return Ok(stream);
        };
        let inner = self.inner.table.delete(stream)?;
        let charged: DynOutputStream = Box::new(ChargedStream {
            inner,
            file,
            quota,
            position,
            in_flight: None,
        });
        Ok(self.inner.table.push(charged)?)
    }
}

impl types::Host for QuotaFsView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.inner, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        if self
            .inner
            .table
            .get(&err)?
            .downcast_ref::<QuotaExceeded>()
            .is_some()
        {
            return Ok(Some(ErrorCode::Quota));
        }
        types::Host::filesystem_error_code(&mut self.inner, err)
    }
}

impl HostDescriptor for QuotaFsView<'_> {
    async fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        HostDescriptor::advise(&mut self.inner, fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        HostDescriptor::sync_data(&mut self.inner, fd).await
    }

    async fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorFlags> {
        HostDescriptor::get_flags(&mut self.inner, fd).await
    }

    async fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorType> {
        HostDescriptor::get_type(&mut self.inner, fd).await
    }

    async fn set_size(&mut self, fd: Resource<Descriptor>, size: types::Filesize) -> FsResult<()> {
        let (Some(quota), Some(file)) = (self.quota_for(&fd), self.file_of(&fd)) else {
            return HostDescriptor::set_size(&mut self.inner, fd, size).await;
        };
        let before = size_of(&file);
        let charged = size.saturating_sub(before);
        quota.charge(charged, 0).map_err(refused)?;
        let result = HostDescriptor::set_size(&mut self.inner, fd, size).await;
        settle(&quota, charged, before, size_of(&file));
        result
    }

    async fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        HostDescriptor::set_times(&mut self.inner, fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        HostDescriptor::read(&mut self.inner, fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        let (Some(quota), Some(file)) = (self.quota_for(&fd), self.file_of(&fd)) else {
            return HostDescriptor::write(&mut self.inner, fd, buf, offset).await;
        };
        let before = size_of(&file);
        let end = offset.saturating_add(buf.len() as u64);
        let charged = end.saturating_sub(before);
        quota.charge(charged, 0).map_err(refused)?;
        let result = HostDescriptor::write(&mut self.inner, fd, buf, offset).await;
        settle(&quota, charged, before, size_of(&file));
        result
    }

    async fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        HostDescriptor::read_directory(&mut self.inner, fd).await
    }

    async fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        HostDescriptor::sync(&mut self.inner, fd).await
    }

    async fn create_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let quota = self.charge_entry(&fd)?;
        let result = HostDescriptor::create_directory_at(&mut self.inner, fd, path).await;
        unless_made(quota, &result);
        result
    }

    async fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorStat> {
        HostDescriptor::stat(&mut self.inner, fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        HostDescriptor::stat_at(&mut self.inner, fd, path_flags, path).await
    }

    async fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        HostDescriptor::set_times_at(&mut self.inner, fd, path_flags, path, atim, mtim).await
    }

    async fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        let quota = self.charge_entry(&new_descriptor)?;
        let result = HostDescriptor::link_at(
            &mut self.inner,
            fd,
            old_path_flags,
            old_path,
            new_descriptor,
            new_path,
        )
        .await;
        unless_made(quota, &result);
        result
    }

    async fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: types::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let creates = oflags.contains(OpenFlags::CREATE);
        let truncates = oflags.contains(OpenFlags::TRUNCATE);
        let quota = match self.quota_for(&fd) {
            Some(quota) if creates || truncates => quota,
            _ => {
                return HostDescriptor::open_at(
                    &mut self.inner,
                    fd,
                    path_flags,
                    path,
                    oflags,
                    flags,
                )
                .await;
            }
        };
        let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
        let existing = self.look(&fd, follow, &path).await;
        let new_entry = creates && existing.is_none();
        if new_entry {
            quota.charge(0, 1).map_err(refused)?;
        }
        let result =
            HostDescriptor::open_at(&mut self.inner, fd, path_flags, path, oflags, flags).await;
        match (&result, existing) {
            (Err(_), _) if new_entry => quota.release(0, 1),
            (Ok(_), Some(stat)) if truncates && stat.type_ == DescriptorType::RegularFile => {
                quota.release(stat.size, 0);
            }
            _ => {}
        }
        result
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        HostDescriptor::drop(&mut self.inner, fd)
    }

    async fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        HostDescriptor::readlink_at(&mut self.inner, fd, path).await
    }

    async fn remove_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let quota = self.quota_for(&fd);
        let result = HostDescriptor::remove_directory_at(&mut self.inner, fd, path).await;
        if let (Some(quota), Ok(())) = (quota, &result) {
            quota.release(0, 1);
        }
        result
    }

    async fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        let Some(quota) = self.quota_for(&new_fd) else {
            return HostDescriptor::rename_at(&mut self.inner, fd, old_path, new_fd, new_path)
                .await;
        };
        let replaced = self.look(&new_fd, false, &new_path).await;
        let result =
            HostDescriptor::rename_at(&mut self.inner, fd, old_path, new_fd, new_path).await;
        if let (Some(stat), Ok(())) = (replaced, &result) {
            let (bytes, files) = freed_by(&stat);
            quota.release(bytes, files);
        }
        result
    }

    async fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        let quota = self.charge_entry(&fd)?;
        let result = HostDescriptor::symlink_at(&mut self.inner, fd, src_path, dest_path).await;
        unless_made(quota, &result);
        result
    }

    async fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let Some(quota) = self.quota_for(&fd) else {
            return HostDescriptor::unlink_file_at(&mut self.inner, fd, path).await;
        };
        let removed = self.look(&fd, false, &path).await;
        let result = HostDescriptor::unlink_file_at(&mut self.inner, fd, path).await;
        if let (Some(stat), Ok(())) = (removed, &result) {
            let (bytes, files) = freed_by(&stat);
            quota.release(bytes, files);
        }
        result
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        HostDescriptor::read_via_stream(&mut self.inner, fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        let stream = HostDescriptor::write_via_stream(&mut self.inner, again(&fd), offset)?;
        self.charged_stream(&fd, stream, Some(offset))
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<DynOutputStream>> {
        let stream = HostDescriptor::append_via_stream(&mut self.inner, again(&fd))?;
        self.charged_stream(&fd, stream, None)
    }

    async fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        HostDescriptor::is_same_object(&mut self.inner, a, b).await
    }

    async fn metadata_hash(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<types::MetadataHashValue> {
        HostDescriptor::metadata_hash(&mut self.inner, fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        HostDescriptor::metadata_hash_at(&mut self.inner, fd, path_flags, path).await
    }
}

impl HostDirectoryEntryStream for QuotaFsView<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        HostDirectoryEntryStream::read_directory_entry(&mut self.inner, stream).await
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        HostDirectoryEntryStream::drop(&mut self.inner, stream)
    }
}

/// [`HasData`] for linking [`QuotaEnvView`] as `wasi:cli/environment`.
pub(crate) struct QuotaEnv;

impl HasData for QuotaEnv {
    type Data<'a> = QuotaEnvView<'a>;
}

/// wasmtime-wasi's `wasi:cli/environment`, and the instance's disk quota.
pub(crate) struct QuotaEnvView<'a> {
    pub(crate) cli: WasiCliCtxView<'a>,
    pub(crate) disk: Option<&'a InstanceDisk>,
}

impl environment::Host for QuotaEnvView<'_> {
    fn get_environment(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        let mut env = environment::Host::get_environment(&mut self.cli)?;
        if let Some(disk) = self.disk {
            env.extend(disk.env());
        }
        Ok(env)
    }

    fn get_arguments(&mut self) -> wasmtime::Result<Vec<String>> {
        environment::Host::get_arguments(&mut self.cli)
    }

    fn initial_cwd(&mut self) -> wasmtime::Result<Option<String>> {
        environment::Host::initial_cwd(&mut self.cli)
    }
}

/// A write of a stream whose outcome is not known yet.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// Bytes charged for it.
    charged: u64,
    /// The file's size before it.
    before: u64,
    /// Its length.
    len: u64,
}

/// A file's output stream whose writes are charged before they start.
struct ChargedStream {
    inner: DynOutputStream,
    file: Arc<std::fs::File>,
    quota: Arc<InstanceDisk>,
    /// Where the next write lands; `None` when appending.
    position: Option<u64>,
    /// The write started and not yet seen to finish.
    in_flight: Option<InFlight>,
}

impl ChargedStream {
    /// Charges a write of `len` bytes, before it starts.
    fn charge(&mut self, len: u64) -> StreamResult<InFlight> {
        let before = size_of(&self.file);
        let charged = match self.position {
            Some(at) => at.saturating_add(len).saturating_sub(before),
            None => len,
        };
        self.quota
            .charge(charged, 0)
            .map_err(|e| StreamError::LastOperationFailed(wasmtime::Error::new(e)))?;
        Ok(InFlight {
            charged,
            before,
            len,
        })
    }

    /// A write finished well: it took what it was charged (all of it, from
    /// `before` on), so only the position moves.
    fn landed(&mut self, write: InFlight) {
        if let Some(at) = &mut self.position {
            *at = at.saturating_add(write.len);
        }
    }

    /// A write failed, or its outcome is lost: the file says what it took.
    fn reconcile(&mut self, write: InFlight) {
        settle(
            &self.quota,
            write.charged,
            write.before,
            size_of(&self.file),
        );
    }

    /// What the inner stream's `check-write` said about the write in flight.
    fn observe(&mut self, permit: &StreamResult<usize>) {
        let Some(write) = self.in_flight else {
            return;
        };
        match permit {
            Ok(0) => {}
            Ok(_) => {
                self.in_flight = None;
                self.landed(write);
            }
            Err(_) => {
                self.in_flight = None;
                self.reconcile(write);
            }
        }
    }

    /// Settles a write in flight that has finished (as far as `check-write`
    /// can tell without waiting).
    fn settle_in_flight(&mut self) -> StreamResult<()> {
        if self.in_flight.is_none() {
            return Ok(());
        }
        let permit = self.inner.check_write();
        self.observe(&permit);
        permit?;
        if self.in_flight.is_some() {
            return Err(StreamError::Trap(wasmtime::format_err!(
                "write not permitted: check_write not called first"
            )));
        }
        Ok(())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for ChargedStream {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for ChargedStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.settle_in_flight()?;
        let write = self.charge(bytes.len() as u64)?;
        match self.inner.write(bytes) {
            Ok(()) => {
                self.in_flight = Some(write);
                Ok(())
            }
            Err(e) => {
                self.reconcile(write);
                Err(e)
            }
        }
    }

    async fn blocking_write_and_flush(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.inner.ready().await;
        self.settle_in_flight()?;
        let write = self.charge(bytes.len() as u64)?;
        match self.inner.blocking_write_and_flush(bytes).await {
            Ok(()) => {
                self.landed(write);
                Ok(())
            }
            Err(e) => {
                self.reconcile(write);
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> StreamResult<()> {
        let result = self.inner.flush();
        if result.is_err()
            && let Some(write) = self.in_flight.take()
        {
            self.reconcile(write);
        }
        result
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        let permit = self.inner.check_write();
        self.observe(&permit);
        permit
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
        if let Some(write) = self.in_flight.take() {
            self.reconcile(write);
        }
    }
}
