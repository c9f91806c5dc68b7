-- sub-query-dimension: 1 statement(s)
-- parameters: []
SELECT "orders__items_total__subquery".value >= 100 AS "orders__big_basket", COUNT("orders".id) AS "orders__count" FROM orders AS "orders" LEFT JOIN (SELECT "orders".id AS pk_0, SUM("line_items".quantity * "line_items".price) AS value FROM orders AS "orders" LEFT JOIN line_items AS "line_items" ON "orders".id = "line_items".order_id GROUP BY 1) AS "orders__items_total__subquery" ON "orders__items_total__subquery".pk_0 = "orders".id GROUP BY 1 ORDER BY 2 DESC LIMIT 10000;
