-- Reporting: each month's store revenue per item category, in 2000.
select d_moy, i_category, sum(ss_ext_sales_price) as revenue, count(*) as line_count
from store_sales, date_dim, item
where ss_sold_date_sk = d_date_sk
    and ss_item_sk = i_item_sk
    and d_year = 2000
group by d_moy, i_category
order by d_moy, revenue desc, i_category
