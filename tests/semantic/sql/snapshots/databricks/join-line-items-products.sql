-- join-line-items-products: 1 statement(s)
-- parameters: []
SELECT `products`.category AS `products__category`, SUM(`line_items`.quantity * `line_items`.price) AS `line_items__total`, SUM(`line_items`.quantity) AS `line_items__quantity` FROM line_items AS `line_items` LEFT JOIN (SELECT id, name, category, price FROM products) AS `products` ON `line_items`.product_id = `products`.id GROUP BY 1 ORDER BY 2 DESC LIMIT 10000;
