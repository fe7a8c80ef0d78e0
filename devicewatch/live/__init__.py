"""Following a run as it is written: where records come from (a recorder started here, or a
file) and the Textual-free model the dashboard's views draw from."""
