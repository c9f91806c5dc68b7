"""What comes back, shaped as Cube answers it: rows and annotations, the /v1/load, /v1/sql and /v1/dry-run
bodies, and /v1/meta."""
