//! Comparing captures: downsample to a grid of block means, then count the
//! cells that differ. Runs in the guest on raw RGBA from the host.
//!
//! Block means (not point samples) so a change of a few pixels, one typed
//! character, still moves its cell's value; the cell threshold ignores the
//! rounding noise of scaled or dithered content. [`Changes`] keeps which cells
//! differ, for `look` to tell the change in a window (and the menus over its
//! edge) from change elsewhere.

/// Side of a grid cell, in pixels.
pub(crate) const CELL: u32 = 4;
/// How far a cell's mean luma may move before it counts as changed (0-255).
const CELL_THRESHOLD: u8 = 3;

/// A rectangle in desktop pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Area {
    pub(crate) x: i32,
    pub(crate) y: i32,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

impl Area {
    /// Whether the point is inside.
    pub(crate) fn contains(&self, x: i32, y: i32) -> bool {
        i64::from(x) >= i64::from(self.x)
            && i64::from(x) < i64::from(self.x) + i64::from(self.width)
            && i64::from(y) >= i64::from(self.y)
            && i64::from(y) < i64::from(self.y) + i64::from(self.height)
    }

    /// The smallest area holding both.
    pub(crate) fn union(&self, other: &Area) -> Area {
        let left = self.x.min(other.x);
        let top = self.y.min(other.y);
        let right = self.right().max(other.right());
        let bottom = self.bottom().max(other.bottom());
        Area {
            x: left,
            y: top,
            width: (right - i64::from(left)).clamp(0, i64::from(u32::MAX)) as u32,
            height: (bottom - i64::from(top)).clamp(0, i64::from(u32::MAX)) as u32,
        }
    }

    /// The part inside `other`, if any.
    pub(crate) fn intersect(&self, other: &Area) -> Option<Area> {
        let left = self.x.max(other.x);
        let top = self.y.max(other.y);
        let right = self.right().min(other.right());
        let bottom = self.bottom().min(other.bottom());
        (right > i64::from(left) && bottom > i64::from(top)).then(|| Area {
            x: left,
            y: top,
            width: (right - i64::from(left)) as u32,
            height: (bottom - i64::from(top)) as u32,
        })
    }

    /// Grown outward to whole cells of the grid that starts at `grid`'s
    /// corner, and clipped to `grid`: an area whose cells line up with a
    /// frame of `grid`.
    pub(crate) fn snap_to(&self, grid: &Area) -> Option<Area> {
        let cell = i64::from(CELL);
        let (gx, gy) = (i64::from(grid.x), i64::from(grid.y));
        let left = gx + (i64::from(self.x) - gx).div_euclid(cell) * cell;
        let top = gy + (i64::from(self.y) - gy).div_euclid(cell) * cell;
        let right = gx + (self.right() - gx + cell - 1).div_euclid(cell) * cell;
        let bottom = gy + (self.bottom() - gy + cell - 1).div_euclid(cell) * cell;
        let snapped = Area {
            x: i32::try_from(left).ok()?,
            y: i32::try_from(top).ok()?,
            width: u32::try_from(right - left).ok()?,
            height: u32::try_from(bottom - top).ok()?,
        };
        snapped.intersect(grid)
    }

    fn right(&self) -> i64 {
        i64::from(self.x) + i64::from(self.width)
    }

    fn bottom(&self) -> i64 {
        i64::from(self.y) + i64::from(self.height)
    }

    /// Area in pixels.
    pub(crate) fn pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// Overlap area in pixels.
    pub(crate) fn overlap(&self, other: &Area) -> u64 {
        let left = i64::from(self.x.max(other.x));
        let top = i64::from(self.y.max(other.y));
        let right = (i64::from(self.x) + i64::from(self.width))
            .min(i64::from(other.x) + i64::from(other.width));
        let bottom = (i64::from(self.y) + i64::from(self.height))
            .min(i64::from(other.y) + i64::from(other.height));
        if right <= left || bottom <= top {
            0
        } else {
            ((right - left) * (bottom - top)) as u64
        }
    }
}

/// A capture reduced to mean luma per `CELL`x`CELL` block.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Frame {
    /// What the capture covered on the desktop.
    pub(crate) area: Area,
    /// Grid width and height, in cells.
    pub(crate) cols: u32,
    pub(crate) rows: u32,
    /// Row-major cell means.
    pub(crate) cells: Vec<u8>,
}

impl Frame {
    /// Reduces `rgba` (`area.width * area.height * 4` bytes); `None` when the
    /// size does not match.
    pub(crate) fn from_rgba(area: Area, rgba: &[u8]) -> Option<Self> {
        let (w, h) = (area.width as usize, area.height as usize);
        if rgba.len() != w * h * 4 || w == 0 || h == 0 {
            return None;
        }
        let cols = area.width.div_ceil(CELL);
        let rows = area.height.div_ceil(CELL);
        let mut sums = vec![0u32; (cols * rows) as usize];
        let mut counts = vec![0u32; (cols * rows) as usize];
        for (y, row) in rgba.chunks_exact(w * 4).enumerate() {
            let base = (y as u32 / CELL * cols) as usize;
            for (x, px) in row.chunks_exact(4).enumerate() {
                // Integer luma (Rec. 601 weights, scaled by 256).
                let luma =
                    (77 * u32::from(px[0]) + 150 * u32::from(px[1]) + 29 * u32::from(px[2])) >> 8;
                let cell = base + x / CELL as usize;
                sums[cell] += luma;
                counts[cell] += 1;
            }
        }
        let cells = sums
            .iter()
            .zip(&counts)
            .map(|(s, c)| (s / (*c).max(1)) as u8)
            .collect();
        Some(Self {
            area,
            cols,
            rows,
            cells,
        })
    }

    /// The mean of the cell holding the desktop point (x, y), if inside.
    pub(crate) fn value_at(&self, x: i32, y: i32) -> Option<u8> {
        if !self.area.contains(x, y) {
            return None;
        }
        // Inside, so the offsets are non-negative and within the grid.
        let col = (x - self.area.x) as u32 / CELL;
        let row = (y - self.area.y) as u32 / CELL;
        self.cells.get((row * self.cols + col) as usize).copied()
    }

    /// Which cells differ from `other`'s; `None` when the frames cover
    /// different areas.
    pub(crate) fn changes(&self, other: &Frame) -> Option<Changes> {
        if self.area != other.area || self.cells.len() != other.cells.len() {
            return None;
        }
        Some(Changes {
            area: self.area,
            cols: self.cols,
            rows: self.rows,
            changed: self
                .cells
                .iter()
                .zip(&other.cells)
                .map(|(a, b)| a.abs_diff(*b) > CELL_THRESHOLD)
                .collect(),
        })
    }

    /// Whether the cell holding (x, y) reads as in `other` (within the cell
    /// threshold).
    pub(crate) fn same_at(&self, other: &Frame, x: i32, y: i32) -> bool {
        match (self.value_at(x, y), other.value_at(x, y)) {
            (Some(a), Some(b)) => a.abs_diff(b) <= CELL_THRESHOLD,
            _ => false,
        }
    }

    /// How `other` differs from `self`; frames of different areas differ
    /// everywhere.
    pub(crate) fn diff(&self, other: &Frame) -> Diff {
        let total = self.cells.len() as u64;
        if self.area != other.area || self.cells.len() != other.cells.len() {
            return Diff {
                changed: total,
                total,
                bbox: Some(other.area),
            };
        }
        let mut changed = 0u64;
        let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0u32, 0u32);
        for (i, (a, b)) in self.cells.iter().zip(&other.cells).enumerate() {
            if a.abs_diff(*b) > CELL_THRESHOLD {
                changed += 1;
                let (cx, cy) = (i as u32 % self.cols, i as u32 / self.cols);
                x0 = x0.min(cx);
                y0 = y0.min(cy);
                x1 = x1.max(cx);
                y1 = y1.max(cy);
            }
        }
        let bbox = (changed > 0).then(|| {
            let x = self.area.x + (x0 * CELL) as i32;
            let y = self.area.y + (y0 * CELL) as i32;
            let right = ((x1 + 1) * CELL).min(self.area.width);
            let bottom = ((y1 + 1) * CELL).min(self.area.height);
            Area {
                x,
                y,
                width: right - x0 * CELL,
                height: bottom - y0 * CELL,
            }
        });
        Diff {
            changed,
            total,
            bbox,
        }
    }
}

/// The difference between two frames.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Diff {
    /// Cells that changed.
    pub(crate) changed: u64,
    /// Cells compared.
    pub(crate) total: u64,
    /// Desktop rectangle holding every changed cell.
    pub(crate) bbox: Option<Area>,
}

impl Diff {
    /// Share of cells that changed, 0.0 to 1.0.
    pub(crate) fn fraction(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.changed as f64 / self.total as f64
        }
    }
}

/// How far a pixel's channel may move before the pixel counts as changed.
const PIXEL_THRESHOLD: u8 = 24;

/// The pixels of `now` (RGBA over `area`) that differ from `before` (RGBA over
/// `before_area`, which must hold `area`): how many, and their box when any.
/// `None` when the sizes do not add up.
pub(crate) fn changed_pixels(
    before_area: &Area,
    before: &[u8],
    area: &Area,
    now: &[u8],
) -> Option<(u64, Option<Area>)> {
    let (bw, w, h) = (
        before_area.width as usize,
        area.width as usize,
        area.height as usize,
    );
    if before.len() != bw * before_area.height as usize * 4
        || now.len() != w * h * 4
        || area.intersect(before_area) != Some(*area)
    {
        return None;
    }
    // Inside `before_area`, so the offsets are non-negative.
    let (ox, oy) = (
        (area.x - before_area.x) as usize,
        (area.y - before_area.y) as usize,
    );
    let mut n = 0u64;
    let mut bbox: Option<Area> = None;
    for y in 0..h {
        for x in 0..w {
            let i = (y * w + x) * 4;
            let j = ((oy + y) * bw + ox + x) * 4;
            let differs = (0..3).any(|c| now[i + c].abs_diff(before[j + c]) > PIXEL_THRESHOLD);
            if differs {
                n += 1;
                let px = Area {
                    x: area.x + x as i32,
                    y: area.y + y as i32,
                    width: 1,
                    height: 1,
                };
                bbox = Some(bbox.map_or(px, |b| b.union(&px)));
            }
        }
    }
    Some((n, bbox))
}

/// Which cells of two frames of one area differ.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Changes {
    /// What the frames covered.
    pub(crate) area: Area,
    cols: u32,
    rows: u32,
    changed: Vec<bool>,
}

/// Changed cells close enough to be one thing (a menu, a dialog, a line of
/// text), with their bounding box.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    pub(crate) bbox: Area,
    /// Indexes of its cells.
    members: Vec<usize>,
}

impl Changes {
    fn cell_area(&self, i: usize) -> Area {
        let (col, row) = (i as u32 % self.cols, i as u32 / self.cols);
        let x = col * CELL;
        let y = row * CELL;
        Area {
            x: self.area.x + x as i32,
            y: self.area.y + y as i32,
            width: CELL.min(self.area.width - x),
            height: CELL.min(self.area.height - y),
        }
    }

    /// Desktop areas of the changed cells.
    pub(crate) fn cells(&self) -> impl Iterator<Item = Area> + '_ {
        self.changed
            .iter()
            .enumerate()
            .filter(|(_, c)| **c)
            .map(|(i, _)| self.cell_area(i))
    }

    /// How many cells changed.
    pub(crate) fn count(&self) -> u64 {
        self.changed.iter().filter(|c| **c).count() as u64
    }

    /// How many cells there are.
    pub(crate) fn total(&self) -> u64 {
        self.changed.len() as u64
    }

    /// The changed cells that overlap `area`: how many, and their box.
    pub(crate) fn within(&self, area: &Area) -> (u64, Option<Area>) {
        let mut n = 0;
        let mut bbox: Option<Area> = None;
        for cell in self.cells().filter(|c| c.overlap(area) > 0) {
            n += 1;
            bbox = Some(bbox.map_or(cell, |b| b.union(&cell)));
        }
        (n, bbox)
    }

    /// Whether one of `group`'s cells overlaps `area`.
    pub(crate) fn reaches(&self, group: &Group, area: &Area) -> bool {
        group
            .members
            .iter()
            .any(|&i| self.cell_area(i).overlap(area) > 0)
    }

    /// How many of `group`'s cells lie wholly outside `area`, and their box.
    pub(crate) fn outside(&self, group: &Group, area: &Area) -> (u64, Option<Area>) {
        let mut n = 0;
        let mut bbox: Option<Area> = None;
        for cell in group.members.iter().map(|&i| self.cell_area(i)) {
            if cell.overlap(area) == 0 {
                n += 1;
                bbox = Some(bbox.map_or(cell, |b| b.union(&cell)));
            }
        }
        (n, bbox)
    }

    /// Forgets the changed cells `drop` says to.
    pub(crate) fn clear_where(&mut self, mut drop: impl FnMut(&Area) -> bool) {
        for i in 0..self.changed.len() {
            if self.changed[i] && drop(&self.cell_area(i)) {
                self.changed[i] = false;
            }
        }
    }

    /// Forgets the changed cell that holds (x, y).
    pub(crate) fn clear_at(&mut self, x: i32, y: i32) {
        if !self.area.contains(x, y) {
            return;
        }
        let col = (x - self.area.x) as u32 / CELL;
        let row = (y - self.area.y) as u32 / CELL;
        if let Some(c) = self.changed.get_mut((row * self.cols + col) as usize) {
            *c = false;
        }
    }

    /// Changed cells joined into groups: cells at most `gap` cells apart are
    /// one group, so a menu drawn over a flat background whose inside did not
    /// change still comes out whole.
    pub(crate) fn groups(&self, gap: u32) -> Vec<Group> {
        let (cols, rows) = (self.cols as i64, self.rows as i64);
        let reach = i64::from(gap) + 1;
        let mut seen = vec![false; self.changed.len()];
        let mut out = Vec::new();
        for start in 0..self.changed.len() {
            if !self.changed[start] || seen[start] {
                continue;
            }
            seen[start] = true;
            let mut stack = vec![start];
            let mut bbox = self.cell_area(start);
            let mut members = Vec::new();
            while let Some(i) = stack.pop() {
                members.push(i);
                bbox = bbox.union(&self.cell_area(i));
                let (c, r) = (i as i64 % cols, i as i64 / cols);
                for dr in -reach..=reach {
                    for dc in -reach..=reach {
                        let (nc, nr) = (c + dc, r + dr);
                        if nc < 0 || nr < 0 || nc >= cols || nr >= rows {
                            continue;
                        }
                        let j = (nr * cols + nc) as usize;
                        if self.changed[j] && !seen[j] {
                            seen[j] = true;
                            stack.push(j);
                        }
                    }
                }
            }
            out.push(Group { bbox, members });
        }
        out
    }
}

/// Follows the frames of one area and tells a change from cells turning back
/// and forth (a blinking caret): a cell that went from its first value to
/// another and back is blinking, and its changes stop counting. A progress bar
/// or new text never returns to how the area first looked.
#[derive(Debug, Clone)]
pub(crate) struct Steadiness {
    first: Frame,
    left: Vec<bool>,
    blinking: Vec<bool>,
}

impl Steadiness {
    /// Starts from `first`.
    pub(crate) fn new(first: &Frame) -> Self {
        let n = first.cells.len();
        Self {
            first: first.clone(),
            left: vec![false; n],
            blinking: vec![false; n],
        }
    }

    /// Whether `next` differs from `prev` in a cell that is not blinking;
    /// learns which cells blink on the way. Frames of another area always
    /// differ.
    pub(crate) fn moved(&mut self, prev: &Frame, next: &Frame) -> bool {
        if prev.area != self.first.area || next.area != self.first.area {
            return true;
        }
        let mut moved = false;
        for (i, ((f, p), n)) in self
            .first
            .cells
            .iter()
            .zip(&prev.cells)
            .zip(&next.cells)
            .enumerate()
        {
            let at_first = f.abs_diff(*n) <= CELL_THRESHOLD;
            if at_first && self.left[i] {
                self.blinking[i] = true;
            } else if !at_first {
                self.left[i] = true;
            }
            if p.abs_diff(*n) > CELL_THRESHOLD && !self.blinking[i] {
                moved = true;
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solid(w: u32, h: u32, v: u8) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..w * h {
            out.extend_from_slice(&[v, v, v, 255]);
        }
        out
    }

    fn area(w: u32, h: u32) -> Area {
        Area {
            x: 100,
            y: 50,
            width: w,
            height: h,
        }
    }

    #[test]
    fn identical_frames_do_not_differ() {
        let a = Frame::from_rgba(area(10, 9), &solid(10, 9, 40)).expect("frame");
        assert_eq!((a.cols, a.rows), (3, 3));
        let d = a.diff(&a.clone());
        assert_eq!((d.changed, d.total, d.bbox), (0, 9, None));
    }

    #[test]
    fn a_few_pixels_change_their_cell_and_the_bbox_is_in_desktop_coordinates() {
        let before = solid(16, 16, 200);
        let mut after = before.clone();
        // Darken a 2x3 patch at (9..11, 5..8): all inside cell (2, 1).
        for y in 5..8 {
            for x in 9..11 {
                let i = (y * 16 + x) * 4;
                after[i..i + 3].copy_from_slice(&[0, 0, 0]);
            }
        }
        let a = Frame::from_rgba(area(16, 16), &before).expect("frame");
        let b = Frame::from_rgba(area(16, 16), &after).expect("frame");
        let d = a.diff(&b);
        assert_eq!(d.changed, 1);
        assert_eq!(
            d.bbox,
            Some(Area {
                x: 108,
                y: 54,
                width: 4,
                height: 4
            })
        );
        assert!(d.fraction() > 0.0 && d.fraction() < 0.2);
    }

    #[test]
    fn frames_of_other_areas_differ_everywhere_and_bad_sizes_are_refused() {
        let a = Frame::from_rgba(area(4, 4), &solid(4, 4, 1)).expect("frame");
        let b = Frame::from_rgba(area(8, 4), &solid(8, 4, 1)).expect("frame");
        assert_eq!(a.diff(&b).fraction(), 1.0);
        assert!(Frame::from_rgba(area(4, 4), &solid(4, 3, 1)).is_none());
    }

    #[test]
    fn overlap_and_contains() {
        let a = Area {
            x: 0,
            y: 0,
            width: 10,
            height: 10,
        };
        let b = Area {
            x: 5,
            y: 5,
            width: 10,
            height: 10,
        };
        assert_eq!(a.overlap(&b), 25);
        assert!(a.contains(9, 9) && !a.contains(10, 0));
    }

    #[test]
    fn changes_group_nearby_cells_and_count_what_overlaps() {
        let (w, h) = (40, 20);
        let before = solid(w, h, 200);
        let mut after = before.clone();
        let mut paint = |x0: usize, x1: usize, y0: usize, y1: usize| {
            for y in y0..y1 {
                for x in x0..x1 {
                    let i = (y * w as usize + x) * 4;
                    after[i..i + 3].copy_from_slice(&[0, 0, 0]);
                }
            }
        };
        // Two marks 4 px apart (one cell of gap), one far away.
        paint(0, 4, 0, 4);
        paint(8, 12, 0, 4);
        paint(36, 40, 16, 20);
        let a = Frame::from_rgba(area(w, h), &before).expect("frame");
        let b = Frame::from_rgba(area(w, h), &after).expect("frame");
        let mut ch = a.changes(&b).expect("same area");
        assert_eq!((ch.count(), ch.total()), (3, 50));
        let groups = ch.groups(1);
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(
            groups[0].bbox,
            Area {
                x: 100,
                y: 50,
                width: 12,
                height: 4
            }
        );
        assert_eq!(ch.groups(0).len(), 3, "no gap allowed");
        let far = Area {
            x: 130,
            y: 60,
            width: 10,
            height: 10,
        };
        assert!(ch.reaches(&groups[1], &far) && !ch.reaches(&groups[0], &far));
        let first_mark = Area {
            x: 100,
            y: 50,
            width: 4,
            height: 4,
        };
        assert_eq!(
            ch.outside(&groups[0], &first_mark),
            (
                1,
                Some(Area {
                    x: 108,
                    y: 50,
                    width: 4,
                    height: 4
                })
            )
        );
        assert_eq!(ch.outside(&groups[1], &far), (0, None));
        let mut cleared = ch.clone();
        cleared.clear_where(|cell| cell.x >= 130);
        assert_eq!(cleared.count(), 2);
        let left = Area {
            x: 100,
            y: 50,
            width: 20,
            height: 20,
        };
        assert_eq!(ch.within(&left).0, 2);
        ch.clear_at(109, 51);
        assert_eq!(ch.within(&left).0, 1);
        assert!(a.same_at(&b, 120, 60) && !a.same_at(&b, 100, 50));
        assert!(
            a.changes(&Frame::from_rgba(area(4, 4), &solid(4, 4, 1)).expect("f"))
                .is_none()
        );
    }

    #[test]
    fn areas_snap_to_a_grid_and_combine() {
        let grid = Area {
            x: 0,
            y: 0,
            width: 1278,
            height: 800,
        };
        let a = Area {
            x: 5,
            y: 7,
            width: 10,
            height: 2,
        };
        assert_eq!(
            a.snap_to(&grid),
            Some(Area {
                x: 4,
                y: 4,
                width: 12,
                height: 8
            })
        );
        let edge = Area {
            x: 1270,
            y: -3,
            width: 30,
            height: 5,
        };
        assert_eq!(
            edge.snap_to(&grid),
            Some(Area {
                x: 1268,
                y: 0,
                width: 10,
                height: 4
            }),
            "clipped to the grid"
        );
        assert_eq!(
            a.union(&edge),
            Area {
                x: 5,
                y: -3,
                width: 1295,
                height: 12
            }
        );
        assert_eq!(a.intersect(&edge), None);
    }

    #[test]
    fn a_cell_that_turns_back_stops_counting_and_new_content_counts() {
        let on = solid(8, 4, 200);
        let mut off = on.clone();
        off[..12].copy_from_slice(&[0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255]);
        // Three pixels of the first cell go dark in `off`, of the second in `text`.
        let mut text = on.clone();
        text[16..28].copy_from_slice(&[0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255]);
        let f = |px: &[u8]| Frame::from_rgba(area(8, 4), px).expect("frame");
        let (on, off, text) = (f(&on), f(&off), f(&text));
        let mut s = Steadiness::new(&on);
        assert!(s.moved(&on, &off), "the first change counts");
        assert!(!s.moved(&off, &on), "turning back is blinking");
        assert!(
            !s.moved(&on, &off) && !s.moved(&off, &on),
            "and stays ignored"
        );
        assert!(s.moved(&on, &text), "another cell changing counts");
    }

    #[test]
    fn changed_pixels_find_a_bar_inside_a_bigger_capture() {
        let big = area(16, 8);
        let before = solid(16, 8, 200);
        let part = Area {
            x: 104,
            y: 50,
            width: 4,
            height: 8,
        };
        let mut now = solid(4, 8, 200);
        for y in 1..7 {
            let i = (y * 4 + 2) * 4;
            now[i..i + 3].copy_from_slice(&[0, 0, 0]);
        }
        assert_eq!(
            changed_pixels(&big, &before, &part, &now),
            Some((
                6,
                Some(Area {
                    x: 106,
                    y: 51,
                    width: 1,
                    height: 6
                })
            ))
        );
        let same = solid(4, 8, 200);
        assert_eq!(changed_pixels(&big, &before, &part, &same), Some((0, None)));
        let outside = Area { x: 0, ..part };
        assert_eq!(changed_pixels(&big, &before, &outside, &now), None);
    }
}
