-- Iterative: store sales per day of the week, in a year's weeks against the same weeks a year later.
with weekly as (
    select d_week_seq as week, d_dow as dow, sum(ss_sales_price) as sales
    from store_sales, date_dim
    where ss_sold_date_sk = d_date_sk
    group by d_week_seq, d_dow
)
select y1.week, y1.dow, y1.sales, y2.sales as next_year, y2.sales * 1.0 / y1.sales as ratio
from weekly y1, weekly y2, date_dim
where y2.week = y1.week + 53
    and y2.dow = y1.dow
    and d_week_seq = y1.week and d_dow = y1.dow and d_year = 2001
    and y1.sales > 0
order by y1.week, y1.dow
