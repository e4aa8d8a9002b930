-- Iterative: from category to class to brand: each brand's store revenue in 2001, ranked within its class.
select i_category, i_class, i_brand, revenue,
    rank() over (partition by i_category, i_class order by revenue desc) as rank_in_class,
    sum(revenue) over (partition by i_category) as category_revenue
from (
    select i_category, i_class, i_brand, sum(ss_ext_sales_price) as revenue
    from store_sales, item, date_dim
    where ss_item_sk = i_item_sk and ss_sold_date_sk = d_date_sk and d_year = 2001
    group by i_category, i_class, i_brand
) as brands
order by i_category, i_class, rank_in_class, i_brand
limit 200
