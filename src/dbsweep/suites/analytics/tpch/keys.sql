-- The primary keys (specification 1.4.2), added after the load so the load's phases are timed apart.
ALTER TABLE region ADD PRIMARY KEY (r_regionkey);
ALTER TABLE nation ADD PRIMARY KEY (n_nationkey);
ALTER TABLE part ADD PRIMARY KEY (p_partkey);
ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);
ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey);
ALTER TABLE customer ADD PRIMARY KEY (c_custkey);
ALTER TABLE orders ADD PRIMARY KEY (o_orderkey);
ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);
-- Secondary indexes on the keys that Q17's and Q20's correlated subqueries look up (lineitem by part and
-- supplier) and Q22's anti-join (orders by customer): without them those queries scan lineitem once per outer
-- row, and their time grows with the square of the scale.
CREATE INDEX lineitem_part_supp ON lineitem (l_partkey, l_suppkey);
CREATE INDEX orders_cust ON orders (o_custkey);
