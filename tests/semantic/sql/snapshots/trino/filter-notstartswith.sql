-- filter-notstartswith: 1 statement(s)
-- parameters: ['c%']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ((NOT LOWER("orders".status) LIKE LOWER(?) ESCAPE '\') OR "orders".status IS NULL) ORDER BY 1 ASC LIMIT 10000;
