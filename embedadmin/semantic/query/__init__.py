"""A Cube JSON query read and normalized for a caller: the normalized query, dates and ranges, access
policies applied."""
