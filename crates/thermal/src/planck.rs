//! Raw counts ↔ temperature: the Planck calibration with a single-path atmospheric transmission.
//!
//! This is the form that reproduces FLIR's desktop export to 0.0005 °C (design notes, section 3):
//!
//! ```text
//! H    = RH · exp(1.5587 + 0.06939·Ta − 0.00027816·Ta² + 0.00000068455·Ta³)
//! τ    = X·exp(−√d·(α1 + β1·√H)) + (1−X)·exp(−√d·(α2 + β2·√H))
//! P(T) = R1 / (R2·(exp(B/(T+273.15)) − F)) − O
//! Sobj = (S − (1−τ)·P(Ta) − τ·(1−E)·P(Trefl)) / (E·τ)
//! T    = B / ln(R1/(R2·(Sobj + O)) + F) − 273.15
//! ```
//!
//! Kept apart from the readers so that the same model serves FLIR JPEG, FFF and SEQ input, and so
//! that callers can convert single values (colour-bar limits, spot readings).

use crate::error::{Error, Result};

/// Kelvin offset of 0 °C.
pub const KELVIN: f64 = 273.15;

/// The camera's Planck calibration constants (CameraInfo 0x58–0x60, 0x308–0x30C).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PlanckConstants {
    /// PlanckR1.
    pub r1: f64,
    /// PlanckB.
    pub b: f64,
    /// PlanckF.
    pub f: f64,
    /// PlanckO (an integer offset in raw counts).
    pub o: f64,
    /// PlanckR2.
    pub r2: f64,
}

/// Atmospheric transmission coefficients (CameraInfo 0x70–0x80).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct AtmosphericTransmission {
    /// AtmosphericTransAlpha1.
    pub alpha1: f64,
    /// AtmosphericTransAlpha2.
    pub alpha2: f64,
    /// AtmosphericTransBeta1.
    pub beta1: f64,
    /// AtmosphericTransBeta2.
    pub beta2: f64,
    /// AtmosphericTransX.
    pub x: f64,
}

impl Default for AtmosphericTransmission {
    /// The values every sample camera stores.
    fn default() -> Self {
        Self { alpha1: 0.006569, alpha2: 0.01262, beta1: -0.002276, beta2: -0.00667, x: 1.9 }
    }
}

/// Measurement conditions: what the user (or the camera at capture time) said about the scene.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Conditions {
    /// Object emissivity, (0, 1].
    pub emissivity: f64,
    /// Object distance in metres, ≥ 0.
    pub distance_m: f64,
    /// Reflected apparent temperature, °C.
    pub reflected_c: f64,
    /// Atmospheric (ambient air) temperature, °C.
    pub atmospheric_c: f64,
    /// Relative humidity as a fraction 0–1.
    pub relative_humidity: f64,
}

impl Conditions {
    /// Checks every field is finite and in range, naming the field when not.
    pub fn validate(&self) -> Result<()> {
        let check = |field: &'static str, v: f64, ok: bool, range: &str| {
            if v.is_finite() && ok {
                Ok(())
            } else {
                Err(Error::InvalidOption { field, reason: format!("{v} is outside {range}") })
            }
        };
        check("emissivity", self.emissivity, self.emissivity > 0.0 && self.emissivity <= 1.0, "(0, 1]")?;
        check("distance_m", self.distance_m, self.distance_m >= 0.0, "[0, ∞) metres")?;
        check("reflected_c", self.reflected_c, self.reflected_c > -KELVIN, "(-273.15, ∞) °C")?;
        check("atmospheric_c", self.atmospheric_c, self.atmospheric_c > -KELVIN, "(-273.15, ∞) °C")?;
        check(
            "relative_humidity",
            self.relative_humidity,
            (0.0..=1.0).contains(&self.relative_humidity),
            "[0, 1] (a fraction, not percent)",
        )
    }
}

/// A ready-to-use conversion: constants plus conditions, with the scene terms precomputed.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TemperatureModel {
    /// Calibration constants.
    pub planck: PlanckConstants,
    /// Transmission coefficients.
    pub transmission: AtmosphericTransmission,
    /// Scene conditions in effect.
    pub conditions: Conditions,
    /// Atmospheric transmission τ for the conditions.
    pub tau: f64,
    /// Raw signal of the atmosphere term, (1−τ)·P(Ta).
    atm_signal: f64,
    /// Raw signal of the reflection term, τ·(1−E)·P(Trefl).
    refl_signal: f64,
}

impl TemperatureModel {
    /// Builds the model, validating the conditions.
    pub fn new(
        planck: PlanckConstants,
        transmission: AtmosphericTransmission,
        conditions: Conditions,
    ) -> Result<Self> {
        conditions.validate()?;
        let tau = transmission_tau(&transmission, &conditions);
        let atm_signal = (1.0 - tau) * celsius_to_raw(&planck, conditions.atmospheric_c);
        let refl_signal =
            tau * (1.0 - conditions.emissivity) * celsius_to_raw(&planck, conditions.reflected_c);
        Ok(Self { planck, transmission, conditions, tau, atm_signal, refl_signal })
    }

    /// Object temperature in °C for a raw count, or `NaN` when the logarithm's argument is ≤ 0.
    pub fn raw_to_celsius(&self, raw: f64) -> f64 {
        let p = &self.planck;
        let e = self.conditions.emissivity;
        let s_obj = (raw - self.atm_signal - self.refl_signal) / (e * self.tau);
        let arg = p.r1 / (p.r2 * (s_obj + p.o)) + p.f;
        if arg.is_nan() || arg <= 0.0 {
            return f64::NAN;
        }
        let t = p.b / arg.ln() - KELVIN;
        if t.is_finite() { t } else { f64::NAN }
    }

    /// The raw count that an object at `celsius` produces under these conditions (inverse of
    /// [`Self::raw_to_celsius`]).
    pub fn celsius_to_raw(&self, celsius: f64) -> f64 {
        let s_obj = celsius_to_raw(&self.planck, celsius);
        s_obj * self.conditions.emissivity * self.tau + self.atm_signal + self.refl_signal
    }
}

/// P(T): the raw signal of a black body at `celsius`.
pub fn celsius_to_raw(p: &PlanckConstants, celsius: f64) -> f64 {
    p.r1 / (p.r2 * ((p.b / (celsius + KELVIN)).exp() - p.f)) - p.o
}

/// Single-path atmospheric transmission τ over the object distance.
pub fn transmission_tau(t: &AtmosphericTransmission, c: &Conditions) -> f64 {
    let ta = c.atmospheric_c;
    let h2o = c.relative_humidity
        * (1.5587 + 0.06939 * ta - 0.00027816 * ta * ta + 0.00000068455 * ta * ta * ta).exp();
    let sd = c.distance_m.sqrt();
    let sh = h2o.sqrt();
    t.x * (-sd * (t.alpha1 + t.beta1 * sh)).exp() + (1.0 - t.x) * (-sd * (t.alpha2 + t.beta2 * sh)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AX8 values from `rt_ax8.json`.
    fn ax8() -> TemperatureModel {
        TemperatureModel::new(
            PlanckConstants { r1: 16951.796875, b: 1435.1, f: 1.0, o: -7142.0, r2: 0.0142948674038053 },
            AtmosphericTransmission::default(),
            Conditions {
                emissivity: 0.95,
                distance_m: 1.0,
                reflected_c: 20.0,
                atmospheric_c: 20.0,
                relative_humidity: 0.5,
            },
        )
        .unwrap()
    }

    #[test]
    fn tau_matches_ground_truth() {
        assert!((ax8().tau - 0.993943).abs() < 1e-6);
    }

    #[test]
    fn forward_and_inverse_agree() {
        let m = ax8();
        for t in [-20.0, 0.0, 25.0, 80.0, 300.0] {
            let raw = m.celsius_to_raw(t);
            assert!((m.raw_to_celsius(raw) - t).abs() < 1e-9, "{t}");
        }
    }

    #[test]
    fn ln_guard_gives_nan() {
        let m = ax8();
        // Far below the calibrated range S_obj + O goes negative.
        assert!(m.raw_to_celsius(-1.0e6).is_nan());
    }

    #[test]
    fn invalid_conditions_name_the_field() {
        let mut c = ax8().conditions;
        c.emissivity = 0.0;
        let msg = c.validate().unwrap_err().to_string();
        assert!(msg.starts_with("invalid option `emissivity`"), "{msg}");
        c.emissivity = 0.9;
        c.relative_humidity = 50.0;
        assert!(c.validate().is_err());
    }
}
