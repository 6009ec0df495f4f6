# Layer kernels (conv, pool, relu, dense, optim) wrappers. Owner: layers helper.
