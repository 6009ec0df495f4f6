# Distance, normalization and pair/triplet loss wrappers. Owner: losses helper.
