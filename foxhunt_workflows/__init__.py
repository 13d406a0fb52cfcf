"""Argo WorkflowTemplates for foxhunt: their Hera definitions, rendering and submission.

Importing this package (or `foxhunt_workflows.commands`) does not import Hera; the modules that
build or submit workflows import it themselves, so `foxhunt --help` works without it.
"""
