-- filter-contains-any-of-several: 1 statement(s)
-- parameters: ['%cess%', '%cel%']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE (LOWER("orders".status) LIKE LOWER(?) ESCAPE '\' OR LOWER("orders".status) LIKE LOWER(?) ESCAPE '\') ORDER BY 1 ASC LIMIT 10000;
