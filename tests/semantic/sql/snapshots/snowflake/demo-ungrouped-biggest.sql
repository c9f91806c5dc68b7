-- demo-ungrouped-biggest: 1 statement(s)
-- parameters: [900]
SELECT "orders".id AS "orders__id", "orders".amount AS "orders__amount" FROM orders AS "orders" WHERE ("orders".amount >= :1) ORDER BY 1 ASC LIMIT 5;
