-- demo-cities-starting-with-b: 1 statement(s)
-- parameters: ['b%']
SELECT "users".city AS "users__city", COUNT("orders".id) AS "orders__count" FROM orders AS "orders" LEFT JOIN users AS "users" ON "orders".user_id = "users".id WHERE (LOWER("users".city) LIKE LOWER(?) ESCAPE '\') GROUP BY 1 ORDER BY 1 ASC LIMIT 10000;
