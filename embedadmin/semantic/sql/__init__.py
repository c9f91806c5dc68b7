"""A normalized query compiled into a SQL syntax tree (sqlglot) with bound parameters, and the plans of a request."""
