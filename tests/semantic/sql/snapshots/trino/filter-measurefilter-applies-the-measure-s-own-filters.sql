-- filter-measurefilter-applies-the-measure-s-own-filters: 1 statement(s)
-- parameters: []
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE (("orders".status = 'completed')) ORDER BY 1 ASC LIMIT 10000;
