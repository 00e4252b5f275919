"""Procedural ray-caster for the geometry of Shapes3D (DeepMind 3dshapes) scenes, in numpy.

The scene is a box room (floor, back wall, two side walls of finite height, open sky
above), one object on the floor at the origin (cube, cylinder, sphere or capsule), a
pinhole camera that orbits the object by the orientation factor, and a light fixed relative
to the camera, above and to the left. Camera and room were fitted to facts measured on the
published images (pixel indices, row 0 at the top, column 0 at the left):

* rows 0-13 are sky, RGB (153, 226, 249), except where the tallest capsules reach into
  them (45 px up from row 52); in the frontal view (0 degrees, class 7) the
  sky/wall edge is row 17 and the wall/floor edge row 41; with the room corner in view the
  edges bend to rows 14-20 and 39-42;
* the corner between back and side wall is at columns 44, 48, 51, 55, 59, 63 for
  orientation classes 0-5, out of view for 6-8 and at 1, 5, 9, 13, 16, 20 for 9-14;
  the side wall beyond the corner is darker (value 0.5-0.8);
* the object is centred at column 31.5; spheres and capsules reach down to row 52;
  from the smallest to the largest scale the sphere diameter grows 18 -> 30 px, the cube
  width 17 -> 30 px (frontal) and the capsule height 26 -> 45 px (object sizes per unit
  scale: sphere diameter 1.0; cube side, cylinder diameter and height 0.82; capsule
  radius 0.40 and height 1.46, hemispherical caps);
* hues are HSV (h, 1, 1); shading changes only the value: lit surfaces have value 1,
  the object is Lambertian with a light from the upper left, and the object's shadow
  falls on the floor to the right of its base at value 0.34 (soft-edged: every
  subsample uses its own point of a small area light).

The fit (least squares on the edge rows, corner columns and sphere size) gives a camera
with focal length 65.2 px, 2.75 units from the object axis, eye height 0.78, optical axis
1.7 degrees above horizontal, and a room with the back wall 4.23 units behind the object,
side walls 4.28 units to either side and walls 2.57 units high.

Colour and geometry factorise. For one geometry (scale, shape, orientation) the renderer
returns *coefficient maps* ``c`` of shape (64, 64, 4), one channel per region in
`REGIONS`: ``c[..., r]`` is the mean over a pixel's supersample rays of
``[ray hits region r] * shading value``. An image is then::

    c[..., 0] * hue_rgb(floor_hue) + c[..., 1] * hue_rgb(wall_hue)
        + c[..., 2] * hue_rgb(object_hue) + c[..., 3] * SKY_RGB
"""

from __future__ import annotations

import numpy as np

SKY_RGB = (np.array([153, 226, 249], dtype=np.float32) / np.float32(255.0))
REGIONS = ("floor", "wall", "object", "sky")

SCALES = np.linspace(0.75, 1.25, 8)
SHAPES = ("cube", "cylinder", "sphere", "capsule")
ORIENTATIONS = np.linspace(-30.0, 30.0, 15)

IMAGE_SIZE = 64

_FOCAL = 65.24                  # pixels
_CAMERA_DISTANCE = 2.75         # horizontal distance of the camera from the object axis
_CAMERA_HEIGHT = 0.779
_PITCH_DEG = -1.71              # negative: the optical axis points slightly upwards
_BACK_WALL = 4.231              # back wall plane z = -_BACK_WALL
_HALF_WIDTH = 4.283             # side wall planes x = +-_HALF_WIDTH
_WALL_HEIGHT = 2.572

_CUBE_SIDE = 0.82               # per unit scale; also cylinder diameter and height
_SPHERE_DIAMETER = 1.0
_CAPSULE_HEIGHT = 1.46
_CAPSULE_RADIUS = 0.40

_LIGHT = np.array([-1.0, 1.2, 0.8])  # towards the light in (right, up, towards camera)
_LIGHT_SPREAD = 0.1                  # area-light half width, relative to the unit direction
_AMBIENT = 0.4
_DIFFUSE = 1.1
SHADOW_VALUE = 0.34
SIDE_WALL_VALUE = (0.5, 0.3)        # value = a + b * |cos(incidence)|

_FLOOR, _WALL, _OBJECT, _SKY = range(4)
_EPS = 1e-7


def hue_rgb(hues: np.ndarray) -> np.ndarray:
    """RGB of HSV (h, 1, 1).

    Parameters
    ----------
    hues : array_like, shape (...)
        Hues in [0, 1).

    Returns
    -------
    np.ndarray
        float32, shape (..., 3), values in [0, 1].
    """
    h = np.asarray(hues, dtype=np.float64)[..., None]
    k = np.mod(np.array([5.0, 3.0, 1.0]) + 6.0 * h, 6.0)
    return (1.0 - np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)).astype(np.float32)


def _camera(orientation_deg: float):
    """Camera centre (3,) and unit right, up, forward vectors (3,) plus the horizontal
    camera frame (right, world up, towards camera) as rows of a (3, 3) array."""
    theta = np.deg2rad(orientation_deg)
    pitch = np.deg2rad(_PITCH_DEG)
    centre = np.array([_CAMERA_DISTANCE * np.sin(theta), _CAMERA_HEIGHT,
                       _CAMERA_DISTANCE * np.cos(theta)])
    back = np.array([np.sin(theta), 0.0, np.cos(theta)])
    right = np.array([np.cos(theta), 0.0, -np.sin(theta)])
    forward = -np.cos(pitch) * back + np.array([0.0, -np.sin(pitch), 0.0])
    up = np.cross(right, forward)
    horizontal = np.stack([right, np.array([0.0, 1.0, 0.0]), back])
    return centre, right, up, forward, horizontal


def _camera_rays(orientation_deg: float, supersample: int) -> tuple[np.ndarray, np.ndarray]:
    """Camera centre (3,) and unit ray directions (64, s, 64, s, 3): pixel row, sub-row,
    pixel column, sub-column; subsamples on a regular s x s grid inside each pixel."""
    centre, right, up, forward, _ = _camera(orientation_deg)
    s = supersample
    coords = (np.arange(IMAGE_SIZE * s) + 0.5) / s - IMAGE_SIZE / 2
    x = (coords / _FOCAL).reshape(1, 1, IMAGE_SIZE, s, 1)
    y = (coords / _FOCAL).reshape(IMAGE_SIZE, s, 1, 1, 1)
    d = forward + x * right - y * up
    return centre, d / np.linalg.norm(d, axis=-1, keepdims=True)


def _light_directions(orientation_deg: float, supersample: int) -> np.ndarray:
    """Unit directions towards the light: the centre (3,) and one point of the area light
    per subsample (s, s, 3), indexed (sub-row, sub-column)."""
    horizontal = _camera(orientation_deg)[4]
    centre = _LIGHT / np.linalg.norm(_LIGHT)
    a = np.array([1.0, 0.0, 0.0]) - centre[0] * centre
    a /= np.linalg.norm(a)
    b = np.cross(centre, a)
    s = supersample
    grid = ((np.arange(s) + 0.5) / s - 0.5) * 2.0 * _LIGHT_SPREAD
    # Transposed and reversed with respect to the ray grid, so that the light sample does
    # not follow the subsample position inside the pixel.
    u = grid[::-1][None, :, None]
    v = grid[:, None, None]
    pts = centre + u * a + v * b
    pts /= np.linalg.norm(pts, axis=-1, keepdims=True)
    return centre @ horizontal, pts @ horizontal


def _hit_sphere(o, d, centre_y, radius):
    oc = o - np.array([0.0, centre_y, 0.0])
    b = np.sum(oc * d, -1)
    disc = b * b - (np.sum(oc * oc, -1) - radius * radius)
    with np.errstate(invalid="ignore"):
        t = -b - np.sqrt(disc)
    return np.where((disc >= 0) & (t > _EPS), t, np.inf)


def _sphere_normal(p, centre_y, radius):
    return (p - np.array([0.0, centre_y, 0.0])) / radius


def _hit_tube(o, d, radius, y0, y1):
    """First hit of the side of a vertical cylinder about the y axis, y0 <= y <= y1."""
    ox, oz = o[..., 0], o[..., 2]
    dx, dz = d[..., 0], d[..., 2]
    a = dx * dx + dz * dz
    b = ox * dx + oz * dz
    disc = b * b - a * (ox * ox + oz * oz - radius * radius)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (-b - np.sqrt(disc)) / a
        y = o[..., 1] + t * d[..., 1]
    ok = (disc >= 0) & (t > _EPS) & (y >= y0) & (y <= y1)
    return np.where(ok, t, np.inf)


def _hit_disc(o, d, radius, y):
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (y - o[..., 1]) / d[..., 1]
        x = o[..., 0] + t * d[..., 0]
        z = o[..., 2] + t * d[..., 2]
    ok = (t > _EPS) & (x * x + z * z <= radius * radius)
    return np.where(ok, t, np.inf)


def _hit_box(o, d, half):
    lo = np.array([-half, 0.0, -half])
    hi = np.array([half, 2.0 * half, half])
    with np.errstate(invalid="ignore", divide="ignore"):
        t1 = (lo - o) / d
        t2 = (hi - o) / d
    near = np.minimum(t1, t2)
    near = np.where(np.isnan(near), -np.inf, near)
    far = np.maximum(t1, t2)
    far = np.where(np.isnan(far), np.inf, far)
    t_near = near.max(-1)
    ok = (t_near <= far.min(-1)) & (t_near > _EPS)
    return np.where(ok, t_near, np.inf), near.argmax(-1)


def _hit_object(shape: int, size: float, o: np.ndarray, d: np.ndarray,
                normals: bool = True):
    """Distance to the object along unit rays (o, d) (broadcast to (n, 3)); inf on a miss.

    Returns (t, normal): t float (n,), normal float (n, 3) unit outward normal at the hit
    (undefined on a miss), or None when `normals` is False.
    """
    if shape == 0:
        half = 0.5 * _CUBE_SIDE * size
        t, axis = _hit_box(o, d, half)
        if not normals:
            return t, None
        n = np.zeros(d.shape)
        sign = -np.sign(np.take_along_axis(d, axis[:, None], -1))
        np.put_along_axis(n, axis[:, None], sign, -1)
        return t, n
    if shape == 1:
        radius = 0.5 * _CUBE_SIDE * size
        height = _CUBE_SIDE * size
        t_side = _hit_tube(o, d, radius, 0.0, height)
        t_top = _hit_disc(o, d, radius, height)
        t = np.minimum(t_side, t_top)
        if not normals:
            return t, None
        p = o + t[:, None] * d
        side = np.stack([p[:, 0], np.zeros(len(p)), p[:, 2]], -1) / radius
        n = np.where((t_top < t_side)[:, None], np.array([0.0, 1.0, 0.0]), side)
        return t, n
    if shape == 2:
        radius = 0.5 * _SPHERE_DIAMETER * size
        t = _hit_sphere(o, d, radius, radius)
        if not normals:
            return t, None
        return t, _sphere_normal(o + t[:, None] * d, radius, radius)
    radius = _CAPSULE_RADIUS * size
    y0, y1 = radius, _CAPSULE_HEIGHT * size - radius
    t_side = _hit_tube(o, d, radius, y0, y1)
    t_low = _hit_sphere(o, d, y0, radius)
    t_high = _hit_sphere(o, d, y1, radius)
    t = np.minimum(t_side, np.minimum(t_low, t_high))
    if not normals:
        return t, None
    p = o + t[:, None] * d
    axis_y = np.clip(p[:, 1], y0, y1)
    n = (p - np.stack([np.zeros(len(p)), axis_y, np.zeros(len(p))], -1)) / radius
    return t, n


def _hit_room(o: np.ndarray, d: np.ndarray):
    """Room surface seen along unit rays from `o` (3,) inside the room, d (n, 3).

    Returns (t, region, side): t float (n,), region int (n,) in {_FLOOR, _WALL, _SKY},
    side bool (n,) True where the wall hit is a side wall.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        t_floor = np.where(d[:, 1] < 0, -o[1] / d[:, 1], np.inf)
        t_back = np.where(d[:, 2] < 0, (-_BACK_WALL - o[2]) / d[:, 2], np.inf)
        x_wall = np.where(d[:, 0] > 0, _HALF_WIDTH, -_HALF_WIDTH)
        t_side = np.where(d[:, 0] != 0, (x_wall - o[0]) / d[:, 0], np.inf)
    t_wall = np.minimum(t_back, t_side)
    t = np.minimum(t_floor, t_wall)
    region = np.where(t_floor <= t_wall, _FLOOR, _WALL)
    region = np.where((region == _WALL) & (o[1] + t * d[:, 1] > _WALL_HEIGHT), _SKY, region)
    return t, region, t_side < t_back


def _cast(scale_index: int, shape_index: int, orientation_index: int,
          supersample: int) -> tuple[np.ndarray, np.ndarray]:
    """Region index int8 and shading value float64 of every subsample ray, both of shape
    (64, s, 64, s) (pixel row, sub-row, pixel column, sub-column); values in [0, 1]."""
    if not (0 <= scale_index < len(SCALES) and 0 <= shape_index < len(SHAPES)
            and 0 <= orientation_index < len(ORIENTATIONS)):
        raise ValueError(f"geometry class out of range: scale {scale_index}, "
                         f"shape {shape_index}, orientation {orientation_index}")
    s = int(supersample)
    if s < 1:
        raise ValueError(f"supersample must be >= 1, got {supersample}")
    orientation = ORIENTATIONS[orientation_index]
    size = SCALES[scale_index]
    origin, d = _camera_rays(orientation, s)
    grid_shape = d.shape[:-1]
    d = d.reshape(-1, 3)
    light, light_samples = _light_directions(orientation, s)

    t_room, region, side = _hit_room(origin, d)
    t_obj, normal = _hit_object(shape_index, size, origin, d)
    on_object = t_obj < t_room
    region = np.where(on_object, _OBJECT, region)

    value = np.ones(len(d))
    value[on_object] = np.clip(
        _AMBIENT + _DIFFUSE * np.maximum(normal[on_object] @ light, 0.0), 0.0, 1.0)
    side_wall = (region == _WALL) & side
    value[side_wall] = SIDE_WALL_VALUE[0] + SIDE_WALL_VALUE[1] * np.abs(d[side_wall, 0])

    lit_room = np.flatnonzero((region == _FLOOR) | (region == _WALL))
    per_ray_light = np.broadcast_to(light_samples[None, :, None, :, :],
                                    grid_shape + (3,)).reshape(-1, 3)
    points = origin + t_room[lit_room, None] * d[lit_room]
    t_shadow, _ = _hit_object(shape_index, size, points, per_ray_light[lit_room],
                              normals=False)
    value[lit_room[np.isfinite(t_shadow)]] *= SHADOW_VALUE
    return region.reshape(grid_shape).astype(np.int8), value.reshape(grid_shape)


def _pixel_mean(per_ray: np.ndarray) -> np.ndarray:
    return per_ray.mean(axis=(1, 3))


def render_coverage(scale_index: int, shape_index: int, orientation_index: int,
                    supersample: int = 4) -> np.ndarray:
    """Fraction of each pixel's subsample rays that hit each region of `REGIONS`.

    Returns
    -------
    np.ndarray
        float32, shape (64, 64, 4), values in [0, 1], summing to 1 over the last axis.
    """
    region, _ = _cast(scale_index, shape_index, orientation_index, supersample)
    onehot = region[..., None] == np.arange(len(REGIONS))
    return _pixel_mean(onehot.astype(np.float32)).astype(np.float32)


def render_geometry(scale_index: int, shape_index: int, orientation_index: int,
                    supersample: int = 4) -> np.ndarray:
    """Coefficient maps of one geometry, ray-cast with `supersample`^2 rays per pixel.

    Parameters
    ----------
    scale_index : int
        Class of the scale factor, 0..7 (scale linspace(0.75, 1.25, 8)).
    shape_index : int
        0 cube, 1 cylinder, 2 sphere, 3 capsule.
    orientation_index : int
        Class of the orientation factor, 0..14 (linspace(-30, 30, 15) degrees).
    supersample : int
        Rays per pixel along each axis.

    Returns
    -------
    np.ndarray
        float32, shape (64, 64, 4), values in [0, 1]: for region r of `REGIONS`, the mean
        over the pixel's rays of [ray hits r] * shading value, so that the image is
        sum over floor, wall, object of c_r * hue_rgb(hue_r), plus c_sky * SKY_RGB.
    """
    region, value = _cast(scale_index, shape_index, orientation_index, supersample)
    weighted = (region[..., None] == np.arange(len(REGIONS))) * value[..., None]
    return _pixel_mean(weighted).astype(np.float32)


def compose(coefficients: np.ndarray, floor_hue: float, wall_hue: float,
            object_hue: float) -> np.ndarray:
    """Image float32 (..., 3) in [0, 1] from coefficient maps (..., 4) and three hues in
    [0, 1)."""
    colours = np.concatenate([hue_rgb(np.array([floor_hue, wall_hue, object_hue])),
                              SKY_RGB[None]], 0)
    return np.clip(np.asarray(coefficients, np.float32) @ colours, 0.0, 1.0)


def render_image(floor_hue: float, wall_hue: float, object_hue: float, scale_index: int,
                 shape_index: int, orientation_index: int, supersample: int = 4) -> np.ndarray:
    """One Shapes3D image, float32 (64, 64, 3) in [0, 1]; hues in [0, 1), the other
    factors as class indices (see `render_geometry`)."""
    maps = render_geometry(scale_index, shape_index, orientation_index, supersample)
    return compose(maps, floor_hue, wall_hue, object_hue)
