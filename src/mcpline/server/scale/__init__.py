"""A server run as several processes: the notification bus (in memory or on Redis) and how
a server attaches to one."""
