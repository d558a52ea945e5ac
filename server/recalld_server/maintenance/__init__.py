"""Store maintenance commands run beside (not through) the server: `recalld reembed`."""
