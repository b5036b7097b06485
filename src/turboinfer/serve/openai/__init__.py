"""The OpenAI front-end: its protocol, routes, scheduler, admission, prefix cache, metrics and the engine's
process."""
