/* polyrx: wideband channelizer and open-loop QPSK demodulator, CPU and CUDA backends.
 * The one public header: include this, link -lpolyrx. */
#ifndef POLYRX_H
#define POLYRX_H

#include "polyrx/chan.h"
#include "polyrx/core.h"
#include "polyrx/detect.h"
#include "polyrx/io.h"
#include "polyrx/modem.h"
#include "polyrx/qpsk.h"
#include "polyrx/qpsk_bank.h"
#include "polyrx/rx.h"
#include "polyrx/rx_multi.h"
#include "polyrx/sim.h"

#endif
