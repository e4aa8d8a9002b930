-- Ad hoc: web returns per county of the returner and reason, with the amount refunded.
select ca_county, r_reason_desc, count(*) as returns, sum(wr_refunded_cash) as refunded
from web_returns, customer_address, reason
where wr_returning_addr_sk = ca_address_sk
    and wr_reason_sk = r_reason_sk
group by ca_county, r_reason_desc
order by returns desc, ca_county, r_reason_desc
limit 100
