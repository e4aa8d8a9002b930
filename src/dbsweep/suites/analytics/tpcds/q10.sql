-- Ad hoc: store sales per hour of the day to households with three dependants, at one store name.
select t_hour, count(*) as sales
from store_sales, household_demographics, time_dim, store
where ss_sold_time_sk = t_time_sk
    and ss_hdemo_sk = hd_demo_sk
    and ss_store_sk = s_store_sk
    and hd_dep_count = 3
    and s_store_name = 'ese'
group by t_hour
order by t_hour
