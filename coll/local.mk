# coll
