/* transforms.c: batched image resampling for data augmentation.
 * Each image n is resampled by its own 2x3 affine matrix theta[n] (output -> input, normalized
 * coordinates), bilinear, zero fill outside: the convention of
 * torch.nn.functional.grid_sample(x, affine_grid(theta, x.shape, align_corners=False),
 * mode="bilinear", padding_mode="zeros", align_corners=False).
 * Images are independent: OpenMP over images, schedule(static); every sum runs in a fixed order
 * within one image, so results do not depend on the thread count. No allocation. */
#include "engine.h"

#include <math.h>
#include <string.h>

/* Below this many output values one thread does the batch (a fork/join costs more). */
#define ME_TRANSFORMS_PAR_MIN 32768

/* Input pixel coordinates of output pixel (i, j): ix = ax*j + bx*i + cx, iy = ay*j + by*i + cy.
 * With u = j + 0.5 - W/2 and v = i + 0.5 - H/2 (pixel centres about the image centre), the
 * normalized output point is (u / (W/2), v / (H/2)), the normalized input point theta @ (.., 1),
 * and the input pixel coordinate ((g + 1) * size - 1) / 2. The identity theta gives ix = j exactly. */
typedef struct { double ax, bx, cx, ay, by, cy; } affine_map;

static affine_map make_map(const float *t, int64_t H, int64_t W) {
    const double w = (double)W, h = (double)H;
    const double u0 = 0.5 - 0.5 * w, v0 = 0.5 - 0.5 * h;
    affine_map m;
    m.ax = t[0];
    m.bx = (double)t[1] * w / h;
    m.cx = (double)t[0] * u0 + m.bx * v0 + (double)t[2] * 0.5 * w + 0.5 * (w - 1.0);
    m.ay = (double)t[3] * h / w;
    m.by = t[4];
    m.cy = m.ay * u0 + (double)t[4] * v0 + (double)t[5] * 0.5 * h + 0.5 * (h - 1.0);
    return m;
}

/* The four bilinear taps of input point (ix, iy), in the order (y0,x0) (y0,x1) (y1,x0) (y1,x1):
 * valid[k] when the tap lies inside the image, off[k] its offset in the H*W plane (0 when not
 * valid), w[k] its weight, dwx[k] / dwy[k] the weight's derivative along ix / iy. */
typedef struct { int64_t off[4]; float w[4], dwx[4], dwy[4]; int valid[4]; } taps;

static inline void make_taps(double ix, double iy, int64_t H, int64_t W, taps *t) {
    /* beyond one pixel outside, every tap is outside: clamping there keeps floor() in range
     * (and maps a NaN to outside) */
    if (!(ix > -2.0)) ix = -2.0;
    if (ix > (double)W + 1.0) ix = (double)W + 1.0;
    if (!(iy > -2.0)) iy = -2.0;
    if (iy > (double)H + 1.0) iy = (double)H + 1.0;
    const double fx0 = floor(ix), fy0 = floor(iy);
    const int64_t x0 = (int64_t)fx0, y0 = (int64_t)fy0;
    const double fx = ix - fx0, fy = iy - fy0;
    const double wx[2] = {1.0 - fx, fx}, wy[2] = {1.0 - fy, fy};
    const double sx[2] = {-1.0, 1.0};
    for (int k = 0; k < 4; k++) {
        const int a = k >> 1, b = k & 1;  /* a: y0 / y1, b: x0 / x1 */
        const int64_t yy = y0 + a, xx = x0 + b;
        const int ok = yy >= 0 && yy < H && xx >= 0 && xx < W;
        t->valid[k] = ok;
        t->off[k] = ok ? yy * W + xx : 0;
        t->w[k] = (float)(wy[a] * wx[b]);
        t->dwx[k] = (float)(wy[a] * sx[b]);
        t->dwy[k] = (float)(sx[a] * wx[b]);
    }
}

void me_affine_resample_forward(const float *x, const float *theta, float *y,
                                int64_t N, int64_t C, int64_t H, int64_t W) {
    const int64_t HW = H * W;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * C * HW >= ME_TRANSFORMS_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const affine_map m = make_map(theta + 6 * n, H, W);
        const float *xn = x + n * C * HW;
        float *yn = y + n * C * HW;
        for (int64_t i = 0; i < H; i++) {
            const double rx = m.bx * (double)i + m.cx, ry = m.by * (double)i + m.cy;
            for (int64_t j = 0; j < W; j++) {
                taps t;
                make_taps(rx + m.ax * (double)j, ry + m.ay * (double)j, H, W, &t);
                for (int64_t c = 0; c < C; c++) {
                    const float *xc = xn + c * HW;
                    float s = 0.0f;
                    for (int k = 0; k < 4; k++)
                        if (t.valid[k]) s += t.w[k] * xc[t.off[k]];
                    yn[c * HW + i * W + j] = s;
                }
            }
        }
    }
}

void me_affine_resample_backward(const float *dy, const float *x, const float *theta, float *dx,
                                 float *dtheta, int64_t N, int64_t C, int64_t H, int64_t W) {
    const int64_t HW = H * W;
    const double w = (double)W, h = (double)H;
#pragma omp parallel for num_threads(me_get_num_threads()) schedule(static) if (N * C * HW >= ME_TRANSFORMS_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const affine_map m = make_map(theta + 6 * n, H, W);
        const float *dyn = dy + n * C * HW, *xn = x + n * C * HW;
        float *dxn = dx ? dx + n * C * HW : NULL;
        if (dxn) memset(dxn, 0, (size_t)(C * HW) * sizeof(float));
        /* d L / d ix and d L / d iy summed over the pixels, weighted by u, v and 1 */
        double gxu = 0.0, gxv = 0.0, gx1 = 0.0, gyu = 0.0, gyv = 0.0, gy1 = 0.0;
        for (int64_t i = 0; i < H; i++) {
            const double rx = m.bx * (double)i + m.cx, ry = m.by * (double)i + m.cy;
            const double v = (double)i + 0.5 - 0.5 * h;
            for (int64_t j = 0; j < W; j++) {
                taps t;
                make_taps(rx + m.ax * (double)j, ry + m.ay * (double)j, H, W, &t);
                float gx = 0.0f, gy = 0.0f;
                for (int64_t c = 0; c < C; c++) {
                    const float g = dyn[c * HW + i * W + j];
                    const float *xc = xn + c * HW;
                    float *dxc = dxn ? dxn + c * HW : NULL;
                    for (int k = 0; k < 4; k++) {
                        if (!t.valid[k]) continue;
                        if (dxc) dxc[t.off[k]] += t.w[k] * g;
                        if (dtheta) {
                            const float gv = g * xc[t.off[k]];
                            gx += t.dwx[k] * gv;
                            gy += t.dwy[k] * gv;
                        }
                    }
                }
                if (dtheta) {
                    const double u = (double)j + 0.5 - 0.5 * w;
                    gxu += gx * u;
                    gxv += gx * v;
                    gx1 += gx;
                    gyu += gy * u;
                    gyv += gy * v;
                    gy1 += gy;
                }
            }
        }
        if (dtheta) {
            float *dt = dtheta + 6 * n;
            dt[0] = (float)gxu;
            dt[1] = (float)(gxv * w / h);
            dt[2] = (float)(gx1 * 0.5 * w);
            dt[3] = (float)(gyu * h / w);
            dt[4] = (float)gyv;
            dt[5] = (float)(gy1 * 0.5 * h);
        }
    }
}
