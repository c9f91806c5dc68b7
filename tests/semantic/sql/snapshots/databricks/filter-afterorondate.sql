-- filter-afterorondate: 1 statement(s)
-- parameters: ['2024-10-27T04:00:00.000Z']
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE (`orders`.created_at >= CAST(:p1 AS TIMESTAMP)) ORDER BY 1 ASC NULLS LAST LIMIT 10000;
