-- Reporting: catalog profit per call center and quarter, in 1999.
select cc_name, d_qoy, sum(cs_net_profit) as profit, sum(cs_quantity) as quantity
from catalog_sales, call_center, date_dim
where cs_call_center_sk = cc_call_center_sk
    and cs_sold_date_sk = d_date_sk
    and d_year = 1999
group by cc_name, d_qoy
order by cc_name, d_qoy
