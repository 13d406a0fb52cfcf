"""Argo WorkflowTemplates for foxhunt: their Hera definitions, rendering, and the submit client.

Importing this package (or `foxhunt_workflows.commands`) imports no Hera: only the modules that
define or render templates (`pods`, `templates`, `render.render_documents`; the `render` extra) do.
`submit` checks against the parameter schema the packaged render (`rendered/`) carries (generated
from `foxhunt.config` by `schema` and `params`) and talks to the Argo Server over plain HTTP.
"""
