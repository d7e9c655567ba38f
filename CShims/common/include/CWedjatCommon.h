// Umbrella header of the CWedjatCommon module (what Swift imports).
#include "wedjat_common.h"
#include "wedjat_json.h"
#include "wedjat_http1.h"
#include "wedjat_http2_walk.h"
#include "wedjat_agent_api.h"
#include "wedjat_http_counts.h"
