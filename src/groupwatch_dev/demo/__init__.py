"""Demo traffic and scenario replay for the README's main command."""
