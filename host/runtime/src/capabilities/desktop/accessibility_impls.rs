// The host side of `accessibility` (contract 0.3.0 on): included by host.rs
// after impls.rs in each version module that has the interface, with `wit`
// naming that version's bindings.

use wit::stephost::plugin::accessibility;

use crate::capabilities::desktop::accessibility::{Element, MAX_DEPTH, MAX_ELEMENTS};

impl From<Element> for accessibility::Element {
    fn from(e: Element) -> Self {
        Self {
            path: e.path,
            role: e.role,
            name: e.name,
            description: e.description,
            value: e.value,
            states: e.states,
            actions: e.actions,
            bounds: e.bounds.map(Into::into),
            editable: e.editable,
            child_count: e.child_count,
        }
    }
}

/// The window `id` as X sees it now (title, owner, geometry: what the bus
/// side matches it by).
async fn x_window(desktop: &Arc<Desktop>, id: u64) -> Result<WindowInfo, DesktopError> {
    let id = window_id(id)?;
    on_x(desktop.clone(), move |x| {
        let focused = x.focused_client()?;
        x.window_info(id, focused)
    })
    .await
}

impl accessibility::Host for HostState {
    async fn status(&mut self) -> Result<(), DesktopError> {
        let desktop = granted_desktop(self)?;
        desktop.accessibility().status().await.map_err(Into::into)
    }

    async fn window_tree(
        &mut self,
        window: u64,
        max_depth: u32,
        max_elements: u32,
    ) -> Result<accessibility::Tree, DesktopError> {
        let desktop = granted_desktop(self)?;
        let info = x_window(&desktop, window).await?;
        let tree = desktop
            .accessibility()
            .tree(&info, max_depth.min(MAX_DEPTH), max_elements.min(MAX_ELEMENTS))
            .await?;
        Ok(accessibility::Tree {
            application: tree.application,
            elements: tree.elements.into_iter().map(Into::into).collect(),
            truncated: tree.truncated,
        })
    }

    async fn get_element(
        &mut self,
        window: u64,
        path: String,
    ) -> Result<accessibility::Element, DesktopError> {
        let desktop = granted_desktop(self)?;
        let info = x_window(&desktop, window).await?;
        Ok(desktop.accessibility().element(&info, &path).await?.into())
    }

    async fn do_action(
        &mut self,
        window: u64,
        path: String,
        action: Option<String>,
        expect_name: Option<String>,
    ) -> Result<accessibility::Element, DesktopError> {
        let desktop = granted_desktop(self)?;
        let info = x_window(&desktop, window).await?;
        tracing::debug!(plugin = &*self.plugin, window, %path, "accessibility action");
        Ok(desktop
            .accessibility()
            .do_action(&info, &path, action.as_deref(), expect_name.as_deref())
            .await?
            .into())
    }

    async fn set_text(
        &mut self,
        window: u64,
        path: String,
        text: String,
        expect_name: Option<String>,
    ) -> Result<accessibility::Element, DesktopError> {
        let desktop = granted_desktop(self)?;
        if text.chars().count() > MAX_TYPE_CHARS {
            return Err(DesktopError::Invalid(format!(
                "text of {} characters: at most {MAX_TYPE_CHARS} in one call; nothing was set",
                text.chars().count()
            )));
        }
        let info = x_window(&desktop, window).await?;
        tracing::debug!(plugin = &*self.plugin, window, %path, "accessibility set-text");
        Ok(desktop
            .accessibility()
            .set_text(&info, &path, &text, expect_name.as_deref())
            .await?
            .into())
    }
}
