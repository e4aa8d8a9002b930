-- Reporting: stock on hand per warehouse and item class, averaged over a quarter of months.
select w_warehouse_name, i_class, avg(inv_quantity_on_hand * 1.0) as on_hand, count(*) as counts
from inventory, warehouse, item, date_dim
where inv_warehouse_sk = w_warehouse_sk
    and inv_item_sk = i_item_sk
    and inv_date_sk = d_date_sk
    and d_month_seq between 1212 and 1214
group by w_warehouse_name, i_class
order by w_warehouse_name, on_hand desc, i_class
