-- filter-or-of-and: 1 statement(s)
-- parameters: [99, 'shipped']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" LEFT JOIN users AS "users" ON "orders".user_id = "users".id WHERE (("orders".amount > :1) OR (("orders".status = :2) AND (NOT "users".country IS NULL))) ORDER BY 1 ASC LIMIT 10000;
