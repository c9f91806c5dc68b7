-- demo-regional-view-with-policy: 1 statement(s)
-- parameters: ['France']
SELECT "users".country AS "sales__users_country", COUNT("orders".id) AS "sales__order_count", SUM("orders".amount) AS "sales__total_amount" FROM orders AS "orders" LEFT JOIN users AS "users" ON "orders".user_id = "users".id WHERE ("users".country = ?) GROUP BY 1 ORDER BY 2 DESC LIMIT 10000;
