-- view-with-row-policy: 1 statement(s)
-- parameters: ['DE']
SELECT "users".city AS "orders_view__users_city", COUNT("orders".id) AS "orders_view__count", SUM("orders".amount) AS "orders_view__revenue" FROM orders AS "orders" LEFT JOIN users AS "users" ON "orders".user_id = "users".id WHERE ("users".country = :1) GROUP BY 1 ORDER BY 2 DESC NULLS LAST LIMIT 10000;
