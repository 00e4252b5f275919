"""Procedural Shapes3D scene: a small numpy ray caster for the 480 geometries.

The scene matches the measured look of the real Shapes3D images (REFERENCE.md, "How the
real images look"): a pinhole camera (focal length 77.5 px, 3.23 units from the object,
eye height 0.81, horizontal view) looks into a box room whose back wall (3.40 units
behind the object) is frontal at orientation 0; the side walls (3.38 units to either side,
2.05 high) come into view as the room turns, their corner moving ~4 px per orientation
step (columns 44..63 and 1..20, hidden for the three middle orientations; the camera
constants were fitted to those columns and to the frontal edge rows 17 and 41). Above the
walls is the flat sky colour RGB (153, 226, 249). One object stands on the floor at the
rotation axis: cube (side 0.8 s), cylinder (radius 0.45 s, height 0.85 s), sphere
(radius 0.5 s, diameter 24 px at scale s = 1) or capsule (radius 0.35 s, height 1.45 s).
Orientation turns room and object together about the vertical axis through the object;
the light is fixed to the camera, from the upper left, so the hard shadow falls on the
floor to the right of the object's base at 0.34 x the floor value. Lit surfaces have HSV
value 1 (floor, back wall, object faces towards the light); side walls are at 0.7; object
faces turned from the light go down to 0.6. Hues act only through the colour, never the
shading, so geometry and colour factorise.

`render_geometry` returns *coefficient maps*: for each pixel and region r (floor, wall,
object, sky), c_r = mean over the pixel's supersamples of [region == r] x value, so that
image = sum_r c_r x colour_r with colour = HSV (hue, 1, 1) for floor / wall / object and
the sky colour for the sky. Supersampling gives anti-aliased edges.
"""

from __future__ import annotations

import numpy as np

SKY_RGB = np.array([153, 226, 249], dtype=np.float32) / 255.0
REGIONS = ("floor", "wall", "object", "sky")

SCALES = np.linspace(0.75, 1.25, 8)
ORIENTATIONS_DEG = np.linspace(-30.0, 30.0, 15)

FOCAL_PX = 77.5
CAMERA_DISTANCE = 3.229
CAMERA_HEIGHT = 0.8126
BACK_WALL_Z = 3.403
SIDE_WALL_X = 3.379
WALL_HEIGHT = 2.053

SIDE_WALL_VALUE = 0.7
SHADOW_VALUE = 0.34
OBJECT_AMBIENT = 0.6
OBJECT_DIFFUSE = 1.1
#: direction towards the light in camera coordinates (x right, y up, z forward)
LIGHT_DIRECTION = np.array([-1.0, 1.6, -0.8]) / np.linalg.norm([-1.0, 1.6, -0.8])

_FAR = np.inf


def hue_rgb(hues) -> np.ndarray:
    """float32 (..., 3) RGB of HSV (h, 1, 1) for hues h in [0, 1)."""
    h = np.asarray(hues, dtype=np.float64)[..., None]
    k = np.mod(np.array([5.0, 3.0, 1.0]) + h * 6.0, 6.0)
    return (1.0 - np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)).astype(np.float32)


def _rotate_y(v: np.ndarray, angle: float) -> np.ndarray:
    """Rotates vectors (..., 3) about the vertical axis by `angle` radians."""
    c, s = np.cos(angle), np.sin(angle)
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    return np.stack([c * x - s * z, y, s * x + c * z], axis=-1)


def _camera_rays(supersample: int) -> np.ndarray:
    """Unit ray directions (64 * s, 64 * s, 3) in camera coordinates."""
    offsets = (np.arange(64 * supersample) + 0.5) / supersample - 32.0
    cols, rows = np.meshgrid(offsets, offsets)
    dirs = np.stack([cols / FOCAL_PX, -rows / FOCAL_PX, np.ones_like(cols)], axis=-1)
    return dirs / np.linalg.norm(dirs, axis=-1, keepdims=True)


def _plane_hit(origin_c: float, direction_c: np.ndarray, plane: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (plane - origin_c) / direction_c
    return np.where(t > 1e-9, t, _FAR)


def _box_hit(o, d, half, height):
    """Slab test against [-half, half] x [0, height] x [-half, half]: (t, normal)."""
    lo = np.array([-half, 0.0, -half])
    hi = np.array([half, height, half])
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (lo - o) / d
        t2 = (hi - o) / d
    t_near = np.minimum(t1, t2)
    t_far = np.maximum(t1, t2)
    t_enter = np.nanmax(t_near, axis=-1)
    t_exit = np.nanmin(t_far, axis=-1)
    hit = (t_enter <= t_exit) & (t_exit > 1e-9)
    axis = np.nanargmax(t_near, axis=-1)
    normal = np.zeros(d.shape)
    np.put_along_axis(normal, axis[..., None],
                      -np.sign(np.take_along_axis(d, axis[..., None], -1)), axis=-1)
    return np.where(hit, np.maximum(t_enter, 0.0), _FAR), normal


def _sphere_hit(o, d, centre, radius):
    oc = o - centre
    b = np.sum(oc * d, axis=-1)
    c = np.sum(oc * oc, axis=-1) - radius ** 2
    disc = b * b - c
    root = np.sqrt(np.maximum(disc, 0.0))
    t = -b - root
    t = np.where(t > 1e-9, t, -b + root)
    hit = (disc >= 0) & (t > 1e-9)
    t = np.where(hit, t, _FAR)
    normal = (o + np.where(hit, t, 0.0)[..., None] * d - centre) / radius
    return t, normal


def _cylinder_hit(o, d, radius, y_low, y_high, caps: bool):
    """Vertical cylinder about the y axis, y in [y_low, y_high]: (t, normal)."""
    a = d[..., 0] ** 2 + d[..., 2] ** 2
    b = o[..., 0] * d[..., 0] + o[..., 2] * d[..., 2]
    c = o[..., 0] ** 2 + o[..., 2] ** 2 - radius ** 2
    disc = b * b - a * c
    with np.errstate(divide="ignore", invalid="ignore"):
        t_side = (-b - np.sqrt(np.maximum(disc, 0.0))) / a
    y_side = o[..., 1] + t_side * d[..., 1]
    side_ok = (disc >= 0) & (t_side > 1e-9) & (y_side >= y_low) & (y_side <= y_high)
    t = np.where(side_ok, t_side, _FAR)
    p = o + np.where(side_ok, t_side, 0.0)[..., None] * d
    normal = np.stack([p[..., 0], np.zeros_like(t), p[..., 2]], axis=-1) / radius
    if caps:
        for plane, ny in ((y_high, 1.0), (y_low, -1.0)):
            t_cap = _plane_hit(o[..., 1], d[..., 1], plane)
            q = o + np.where(np.isfinite(t_cap), t_cap, 0.0)[..., None] * d
            inside = q[..., 0] ** 2 + q[..., 2] ** 2 <= radius ** 2
            closer = inside & (t_cap < t)
            t = np.where(closer, t_cap, t)
            normal = np.where(closer[..., None], np.array([0.0, ny, 0.0]), normal)
    return t, normal


def _closest(*hits):
    t = np.full(hits[0][0].shape, _FAR)
    normal = np.zeros(hits[0][1].shape)
    for t_i, n_i in hits:
        closer = t_i < t
        t = np.where(closer, t_i, t)
        normal = np.where(closer[..., None], n_i, normal)
    return t, normal


def object_hit(o: np.ndarray, d: np.ndarray, shape: int, scale: float):
    """(t, unit normal) of rays (o, d) against the object in room coordinates; t=inf: miss.

    shape: 0 cube, 1 cylinder, 2 sphere, 3 capsule; scale in [0.75, 1.25].
    """
    o = np.broadcast_to(o, d.shape)
    if shape == 0:
        return _box_hit(o, d, 0.4 * scale, 0.8 * scale)
    if shape == 1:
        return _cylinder_hit(o, d, 0.45 * scale, 0.0, 0.85 * scale, caps=True)
    if shape == 2:
        radius = 0.5 * scale
        return _sphere_hit(o, d, np.array([0.0, radius, 0.0]), radius)
    if shape == 3:
        radius, height = 0.35 * scale, 1.45 * scale
        return _closest(
            _cylinder_hit(o, d, radius, radius, height - radius, caps=False),
            _sphere_hit(o, d, np.array([0.0, radius, 0.0]), radius),
            _sphere_hit(o, d, np.array([0.0, height - radius, 0.0]), radius))
    raise ValueError(f"shape index must be 0..3, found {shape}")


def render_geometry(scale_index: int, shape_index: int, orientation_index: int,
                    supersample: int = 4) -> np.ndarray:
    """Coefficient maps float32 (64, 64, 4) in [0, 1] of one geometry (see module doc).

    Channels are REGIONS (floor, wall, object, sky); the coverage of the four regions in
    each pixel sums to 1 and each coefficient is coverage x mean HSV value.
    """
    scale = float(SCALES[scale_index])
    angle = np.deg2rad(ORIENTATIONS_DEG[orientation_index])
    dirs_cam = _camera_rays(supersample).reshape(-1, 3)
    # Turning room and object by `angle` equals turning the camera and light the other way.
    d = _rotate_y(dirs_cam, angle)
    o = _rotate_y(np.array([0.0, CAMERA_HEIGHT, -CAMERA_DISTANCE]), angle)
    light = _rotate_y(LIGHT_DIRECTION, angle)

    t_floor = np.where(d[:, 1] < 0, _plane_hit(o[1], d[:, 1], 0.0), _FAR)
    t_back = _plane_hit(o[2], d[:, 2], BACK_WALL_Z)
    t_right = _plane_hit(o[0], d[:, 0], SIDE_WALL_X)
    t_left = _plane_hit(o[0], d[:, 0], -SIDE_WALL_X)
    t_wall = np.minimum(t_back, np.minimum(t_right, t_left))
    wall_y = o[1] + np.where(np.isfinite(t_wall), t_wall, 0.0) * d[:, 1]
    is_side = np.minimum(t_right, t_left) < t_back
    t_obj, normal = object_hit(o, d, shape_index, scale)

    region = np.full(len(d), 3)                                    # sky
    value = np.ones(len(d))
    wall = (t_wall < t_floor) & (wall_y <= WALL_HEIGHT)
    region[wall] = 1
    value[wall & is_side] = SIDE_WALL_VALUE
    floor = t_floor <= t_wall
    region[floor] = 0
    obj = t_obj < np.minimum(t_floor, np.where(wall, t_wall, _FAR))
    region[obj] = 2
    lambert = np.clip(normal @ light, 0.0, 1.0)
    value[obj] = np.minimum(1.0, OBJECT_AMBIENT + OBJECT_DIFFUSE * lambert[obj])

    floor_only = floor & ~obj
    ground = o + np.where(floor_only, t_floor, 0.0)[:, None] * d
    t_shadow, _ = object_hit(ground[floor_only], np.broadcast_to(light, (floor_only.sum(), 3)),
                             shape_index, scale)
    shadowed = np.zeros(len(d), dtype=bool)
    shadowed[floor_only] = np.isfinite(t_shadow)
    value[shadowed] = SHADOW_VALUE

    s = supersample
    onehot = (region[:, None] == np.arange(4)[None, :]) * value[:, None]
    maps = onehot.reshape(64, s, 64, s, 4).mean(axis=(1, 3))
    return maps.astype(np.float32)


def render_image(floor_hue: float, wall_hue: float, object_hue: float, scale_index: int,
                 shape_index: int, orientation_index: int, supersample: int = 4
                 ) -> np.ndarray:
    """One image float32 (64, 64, 3) in [0, 1]; hues in [0, 1) (convenience for tests)."""
    maps = render_geometry(scale_index, shape_index, orientation_index, supersample)
    colours = np.concatenate([hue_rgb([floor_hue, wall_hue, object_hue]), SKY_RGB[None]])
    return np.clip(maps @ colours, 0.0, 1.0)
