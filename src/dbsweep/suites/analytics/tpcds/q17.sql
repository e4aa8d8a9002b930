-- Iterative: items whose store sales in a month of 2000 were more than 10 % off their monthly average.
select i_item_id, d_moy, sales, average
from (
    select i_item_id, d_moy, sum(ss_sales_price) as sales,
        avg(sum(ss_sales_price)) over (partition by i_item_id) as average
    from store_sales, item, date_dim
    where ss_item_sk = i_item_sk and ss_sold_date_sk = d_date_sk and d_year = 2000
    group by i_item_id, d_moy
) as monthly
where average > 0 and (sales > 1.1 * average or sales < 0.9 * average)
order by i_item_id, d_moy
limit 100
