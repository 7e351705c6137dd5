/* Per-pulse parameters of a block of SAR pulses, as a GstMeta.
 *
 * A buffer of application/x-sar-phase-history or application/x-sar-range-profiles
 * holds a block of consecutive pulses (rows). Its GstSarPulseMeta carries, for
 * every row, the pulse's per-vector parameters (the fields of NGA CPHD 1.0/1.1
 * PVPs: times in seconds from the collection start, positions and velocities
 * in ECF metres and m/s, frequencies in Hz) and the index of the block's first
 * pulse in the collection.
 *
 * The meta is copied whenever its buffer's metadata is copied (it has no
 * memory tags), so it survives gpuupload, gpudownload and any element that
 * copies metadata to its output.
 */
#pragma once

#include <gst/gst.h>

#ifndef GST_SAR_API
#define GST_SAR_API __attribute__((visibility("default"))) extern
#endif

G_BEGIN_DECLS

/* Media types of SAR streams. */
#define GST_SAR_PHASE_HISTORY_MEDIA_TYPE "application/x-sar-phase-history"
#define GST_SAR_RANGE_PROFILES_MEDIA_TYPE "application/x-sar-range-profiles"

/* One pulse's parameters, named after CPHD's PVPs. */
typedef struct {
  gdouble tx_time;      /* TxTime, s */
  gdouble tx_pos[3];    /* TxPos, ECF m */
  gdouble tx_vel[3];    /* TxVel, ECF m/s */
  gdouble rcv_time;     /* RcvTime, s */
  gdouble rcv_pos[3];   /* RcvPos, ECF m */
  gdouble rcv_vel[3];   /* RcvVel, ECF m/s */
  gdouble srp_pos[3];   /* SRPPos: scene reference point, ECF m */
  gdouble amp_sf;       /* AmpSF: scale factor of this pulse's samples (1 when absent) */
  gdouble a_fdop;       /* aFDOP */
  gdouble a_frr1;       /* aFRR1 */
  gdouble a_frr2;       /* aFRR2 */
  gdouble fx1, fx2;     /* FX1, FX2: transmitted band, Hz */
  gdouble fxn1, fxn2;   /* FXN1, FXN2 (optional, 0 when absent) */
  gdouble toa1, toa2;   /* TOA1, TOA2, s */
  gdouble toae1, toae2; /* TOAE1, TOAE2 (optional) */
  gdouble td_tropo_srp; /* TDTropoSRP, s */
  gdouble td_iono_srp;  /* TDIonoSRP, s (optional) */
  gdouble sc0;          /* SC0: first sample's time (s, time domain) or frequency (Hz, frequency domain) */
  gdouble scss;         /* SCSS: sample spacing, s or Hz */
  gint64 signal;        /* SIGNAL: 0 = no valid signal in this pulse (1 when absent) */
  /* CPHD 1.1 antenna pointing (zero when absent). */
  gdouble tx_acx[3], tx_acy[3], tx_eb[2];
  gdouble rcv_acx[3], rcv_acy[3], rcv_eb[2];
} GstSarPulseParameters;

typedef struct {
  GstMeta meta;
  /* Index of the block's first pulse in the collection (CPHD vector index). */
  guint64 first_pulse;
  /* Number of pulses (rows) in the buffer and of entries in @pulses. */
  guint n_pulses;
  GstSarPulseParameters *pulses;
} GstSarPulseMeta;

GST_SAR_API GType gst_sar_pulse_meta_api_get_type (void);
#define GST_SAR_PULSE_META_API_TYPE (gst_sar_pulse_meta_api_get_type ())
GST_SAR_API const GstMetaInfo *gst_sar_pulse_meta_get_info (void);
#define GST_SAR_PULSE_META_INFO (gst_sar_pulse_meta_get_info ())

/* Adds a meta holding a copy of @n_pulses parameters (@pulses may be NULL:
 * the entries are then zero with amp_sf = 1 and signal = 1). */
GST_SAR_API GstSarPulseMeta *gst_buffer_add_sar_pulse_meta (GstBuffer * buffer, guint64 first_pulse,
    guint n_pulses, const GstSarPulseParameters * pulses);

#define gst_buffer_get_sar_pulse_meta(b) \
  ((GstSarPulseMeta *) gst_buffer_get_meta ((b), GST_SAR_PULSE_META_API_TYPE))

/* The same pulses as a GstCustomMeta named GST_SAR_PULSE_CUSTOM_META
 * (`custom-meta` on cphdsrc and sarsim), for language bindings, which read a
 * GstStructure where they cannot read the struct: first-pulse (guint64),
 * n-pulses, record-size (guint) and pulses (GBytes: n-pulses
 * GstSarPulseParameters records of record-size bytes, every field 8 bytes
 * in the order above, native byte order). Untagged and carried like the
 * struct. */
#define GST_SAR_PULSE_CUSTOM_META "GstSarPulses"

/* Adds the custom meta holding a copy of `meta`'s pulses to `buffer` (writable). */
GST_SAR_API GstCustomMeta *gst_buffer_add_sar_pulse_custom_meta (GstBuffer * buffer, const GstSarPulseMeta * meta);

/* Fills @params with the defaults of a pulse (every field 0, amp_sf 1, signal 1). */
GST_SAR_API void gst_sar_pulse_parameters_init (GstSarPulseParameters * params);

G_END_DECLS
