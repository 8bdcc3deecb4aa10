# p2p
