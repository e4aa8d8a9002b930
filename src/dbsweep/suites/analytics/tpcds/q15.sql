-- Iterative: each category's monthly catalog sales in 2000 beside the average of its last three months.
select i_category, d_moy, sales,
    avg(sales) over (partition by i_category order by d_moy rows between 2 preceding and current row) as moving
from (
    select i_category, d_moy, sum(cs_ext_sales_price) as sales
    from catalog_sales, item, date_dim
    where cs_item_sk = i_item_sk and cs_sold_date_sk = d_date_sk and d_year = 2000
    group by i_category, d_moy
) as monthly
order by i_category, d_moy
