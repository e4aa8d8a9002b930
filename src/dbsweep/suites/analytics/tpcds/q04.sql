-- Reporting: web orders per warehouse and ship mode by days from sale to shipment, over a year of months.
select
    w_warehouse_name, sm_type,
    sum(case when ws_ship_date_sk - ws_sold_date_sk <= 30 then 1 else 0 end) as within_30,
    sum(case when ws_ship_date_sk - ws_sold_date_sk > 30 and ws_ship_date_sk - ws_sold_date_sk <= 60
        then 1 else 0 end) as within_60,
    sum(case when ws_ship_date_sk - ws_sold_date_sk > 60 and ws_ship_date_sk - ws_sold_date_sk <= 90
        then 1 else 0 end) as within_90,
    sum(case when ws_ship_date_sk - ws_sold_date_sk > 90 then 1 else 0 end) as later
from web_sales, warehouse, ship_mode, date_dim
where ws_warehouse_sk = w_warehouse_sk
    and ws_ship_mode_sk = sm_ship_mode_sk
    and ws_ship_date_sk = d_date_sk
    and d_month_seq between 1200 and 1211
group by w_warehouse_name, sm_type
order by w_warehouse_name, sm_type
