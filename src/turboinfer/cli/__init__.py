"""Command line: each verb parses, calls one library function, renders the result."""
