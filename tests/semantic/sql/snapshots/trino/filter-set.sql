-- filter-set: 1 statement(s)
-- parameters: []
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" LEFT JOIN users AS "users" ON "orders".user_id = "users".id WHERE (NOT "users".country IS NULL) ORDER BY 1 ASC LIMIT 10000;
