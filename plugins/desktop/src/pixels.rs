//! Comparing captures: downsample to a grid of block means, then count the
//! cells that differ. Runs in the guest on raw RGBA from the host.
//!
//! Block means (not point samples) so a change of a few pixels, one typed
//! character, still moves its cell's value; the cell threshold ignores the
//! rounding noise of scaled or dithered content.

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
}
