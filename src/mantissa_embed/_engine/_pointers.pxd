# Data pointers of optional float32 C-contiguous 1-D or 2-D arrays, for the typed modules of this
# package (NULL for None or an empty array).

cdef inline const float *_fptr(a):
    cdef const float[::1] v1
    cdef const float[:, ::1] v2
    if a is None or a.size == 0:
        return NULL
    if a.ndim == 2:
        v2 = a
        return &v2[0, 0]
    v1 = a
    return &v1[0]


cdef inline float *_wptr(a):
    cdef float[::1] v1
    cdef float[:, ::1] v2
    if a is None or a.size == 0:
        return NULL
    if a.ndim == 2:
        v2 = a
        return &v2[0, 0]
    v1 = a
    return &v1[0]
