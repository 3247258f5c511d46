/*
 * hpam_am.h — the native active-message API, in the style of Generic Active
 * Messages (HP-LAM report): request/reply with four word arguments, bulk
 * store and get, poll, handler registration. Underneath runs the HPAM
 * all-to-all D-way request-reply protocol over an emulated Medusa (or Hamlyn)
 * card in shared memory.
 *
 * Rules (HPAM section 4): a request handler may send only one reply, to its
 * requester, through its token; a reply handler may not send. Breaking them
 * returns HPAM_ERR_RULE. When a request handler does not reply, the layer
 * sends an empty acknowledgement.
 *
 * Every function returns HPAM_OK (0) or a negative HPAM_ERR_* code; the
 * calls never throw and never abort the process.
 */
#ifndef HPAM_AM_H
#define HPAM_AM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  HPAM_OK = 0,
  HPAM_ERR_BUSY = -1,        /* all D request instances to that peer are in use */
  HPAM_ERR_AGAIN = -2,       /* momentarily out of a resource; poll and retry   */
  HPAM_ERR_UNREACHABLE = -3, /* give-up time passed with no answer from a peer  */
  HPAM_ERR_INVALID = -4,     /* an argument is out of range                      */
  HPAM_ERR_RULE = -5,        /* request/reply rule broken                        */
  HPAM_ERR_REJECTED = -6,    /* a protection or bounds check refused it          */
  HPAM_ERR_NO_RESOURCE = -7, /* setup could not get memory or a segment          */
  HPAM_ERR_SYSTEM = -8,      /* an operating-system call failed                  */
  HPAM_ERR_NOT_SUPPORTED = -9
};

typedef struct hpam_ep hpam_ep_t;       /* one endpoint per process            */
typedef struct hpam_token hpam_token_t; /* names the message a handler runs for */

/* Handlers are registered by index (0..HPAM_MAX_HANDLERS-1), the same index
 * in every process; packets carry the index, never a code address. */
#define HPAM_MAX_HANDLERS 256

/* The bytes of a card block a packet spends on its headers (the card's and
 * the protocol's): hpam_max_bulk is the block size less these. */
#define HPAM_PACKET_HEADER_BYTES 64

typedef void (*hpam_handler4_fn)(hpam_token_t* token, void* ctx, uint64_t a0, uint64_t a1,
                                 uint64_t a2, uint64_t a3);
/* Bulk handler: data/len name the transferred bytes (at the target address
 * for a store, in the receive block for a medium message: valid only during
 * the call), arg is the sender's argument word. */
typedef void (*hpam_handler_bulk_fn)(hpam_token_t* token, void* ctx, void* data, size_t len,
                                     uint64_t arg);

/* A process's view of one run. Fill with hpam_config_init, then override.
 * Every field but the first three and `key` and `poll_on_send` is a knob of
 * the table in hpam_knobs.h, which gives its default, unit and valid range
 * (and hpam_ep_create checks them). */
typedef struct hpam_config {
  const char* job;            /* job id, identical in all processes (required)          */
  int nprocs;                 /* processes in the job                                     */
  int my_proc;                /* this process, 0..nprocs-1                                */
  const char* nic;            /* "medusa" or "hamlyn"                                     */
  uint32_t depth;             /* D, request instances per peer                            */
  uint32_t block_size;        /* card block = max packet, bytes (power of two)            */
  uint32_t rx_blocks;         /* inbound blocks; 0 = 2*(P-1)*(D+1), worst case + 2 a peer */
  uint64_t timeout_ns;        /* first retransmission timeout                             */
  uint32_t backoff_limit;     /* max doublings of the timeout                             */
  uint64_t give_up_ns;        /* peer declared unreachable after this                     */
  uint32_t checks_per_poll;   /* K: request descriptors checked per poll                  */
  int key_check;              /* check the job key on arrival                             */
  int crc_check;              /* compute and check CRC32C on packets (off is refused
                               * together with fault_corrupt > 0)                          */
  int direct_tx;              /* Medusa: an idle card engine sends a launched block at   */
                              /* once, without the TX_READY/TX_FREE round trip (default 1) */
  int by_reference;           /* Medusa: a packet longer than an RX_READY cell, on a wire */
                              /* without faults, is read in the sender's block instead of */
                              /* a copy in the receiver's (the card's DMA; default 1);    */
                              /* Hamlyn: longer than 4 KiB, without faults or CRC         */
  int headless_cells;         /* Medusa: a packet carried in its RX_READY cell, on a wire */
                              /* without faults, leaves its wire header out (default 1)   */
  uint32_t rx_ready_cell;     /* Medusa: bytes per RX_READY cell; a packet of up to this  */
                              /* less 16 bytes (headless: this many) travels in the cell  */
                              /* (16: in its block; default 512)                          */
  uint32_t notify_inline;     /* Hamlyn: a packet of up to this many bytes (at most 480,  */
                              /* the default) travels in its notification entry (0: in   */
                              /* its block; entries of 128 bytes up to 96, else 256/512)  */
  uint64_t key;               /* job protection key, the same in every process; 0: process
                               * 0 draws a random key and publishes it in its card, where
                               * the others read it (their hpam_ep_create then waits for
                               * process 0's card, up to attach_timeout_ms)                */
  uint64_t attach_timeout_ms; /* wait for a peer's card to appear                         */
  /* Fault model of the wire: probabilities in [0,1], seeded generator. */
  double fault_drop, fault_duplicate, fault_corrupt, fault_reorder, fault_delay;
  uint64_t fault_delay_ns;         /* how long a delayed packet is held                        */
  uint64_t fault_seed;             /* generator seed; mixed with my_proc                       */
  int poll_on_send;                /* poll once after each send, as HPAM_4 does (default 1)    */
  int defer_acks;                  /* launch empty acks after the next send or poll            */
  int piggyback_acks;              /* a deferred ack rides on the next request to its peer (an */
                                   /* 8-byte trailer) instead of its own packet (default 1)    */
  uint32_t receive_budget;         /* most packets one poll handles                            */
  int multi_ack;                   /* deferred plain acks to one peer share one ack packet,   */
                                   /* gathered while a stream arrives (default 1)             */
  int ordered;                     /* requests to a peer take its D instances in turn, never  */
                                   /* searching, so request n goes out only once request n-D */
                                   /* is answered: a receiver restores the order of launch by */
                                   /* holding at most D-1 requests (default 0)                */
  const char* background_resend;   /* "auto" (default), "on" or "off": a thread resends lost */
                                   /* packets while the owner makes no call (auto: only when */
                                   /* the wire can lose or hold packets)                       */
  int adaptive_timeout;            /* when the wire can lose packets, the timeout follows each */
                                   /* peer's round trip, within [timeout_min_ns, timeout_ns];  */
                                   /* on every wire, resends only to a peer that polled since  */
                                   /* the send (0: the paper's fixed timer)                    */
  uint64_t timeout_min_ns;         /* the adaptive timeout's floor                              */
  int early_resend;                /* ordered: resend a request once 3 later ones are answered */
  const char* acks_wait_when_idle; /* "auto" (default), "on" or "off": a poll that finds   */
                                   /* nothing leaves deferred acks waiting for a request to  */
                                   /* ride on (at most 16 polls) instead of launching them;  */
                                   /* auto: when the job's processes outnumber the node's    */
                                   /* online cores (they then take turns on them)            */
} hpam_config_t;

void hpam_config_init(hpam_config_t* cfg);

/* Creates this process's card and endpoint. Peers' cards are attached by
 * hpam_connect (lazily, as a BTL's add_procs does) or all at once by
 * hpam_connect_all. The error text of a failure is in hpam_last_error(). */
int hpam_ep_create(const hpam_config_t* cfg, hpam_ep_t** ep);
int hpam_connect(hpam_ep_t* ep, int proc);
int hpam_connect_all(hpam_ep_t* ep);
/* Serves the network until every outstanding request is answered (or the
 * give-up time passes), then releases the card. */
int hpam_ep_destroy(hpam_ep_t* ep);
/* Removes the shared-memory names (/dev/shm) of every card of `job` for
 * processes 0..nprocs-1: AM cards of either model and deposit cards. A card
 * stays attachable under its name until every peer has mapped it (a peer
 * may start late); a launcher that knows the job is over and no process of
 * it will attach again calls this so that nothing of the job is left
 * (mappings stay valid). Returns how many names were removed. */
int hpam_remove_job_segments(const char* job, int nprocs);

int hpam_procs(const hpam_ep_t* ep);
int hpam_my_proc(const hpam_ep_t* ep);
size_t hpam_max_bulk(const hpam_ep_t* ep); /* largest store/medium payload in one packet */

int hpam_register_handler4(hpam_ep_t* ep, unsigned index, hpam_handler4_fn fn, void* ctx);
int hpam_register_handler_bulk(hpam_ep_t* ep, unsigned index, hpam_handler_bulk_fn fn, void* ctx);

/* Called once for each of my requests to another process when its answer
 * is taken: a reply (after its reply handler), the protocol's empty
 * acknowledgement (deferred, riding on a request or sharing an ack packet),
 * or a refusal (which hpam_poll also reports); from inside hpam_poll or a
 * send that serves the network. `handler` is the index the request named,
 * `arg` its argument word (a short request's first word). So a transport
 * learns what its peer has taken without a reply of its own per message.
 * The hook must not send. NULL removes it. */
typedef void (*hpam_answer_fn)(void* ctx, int peer, unsigned handler, uint64_t arg);
void hpam_set_answer_hook(hpam_ep_t* ep, hpam_answer_fn fn, void* ctx);

/* Short request, 4 words. Blocks (serving the network) while all D instances
 * to dest are busy. hpam_try_request_4 returns HPAM_ERR_BUSY instead. */
int hpam_request_4(hpam_ep_t* ep, int dest, unsigned handler, uint64_t a0, uint64_t a1, uint64_t a2,
                   uint64_t a3);
int hpam_try_request_4(hpam_ep_t* ep, int dest, unsigned handler, uint64_t a0, uint64_t a1,
                       uint64_t a2, uint64_t a3);
int hpam_reply_4(hpam_token_t* token, unsigned handler, uint64_t a0, uint64_t a1, uint64_t a2,
                 uint64_t a3);

/* The segment (as in GAM): the memory of this process that peers may store
 * into and get from. One per endpoint; calling again replaces it; len 0
 * disables it (then every store and get from a peer is refused). Store
 * targets and get sources are absolute addresses in the destination's
 * address space and must lie entirely inside the destination's segment;
 * otherwise the destination refuses the request, counts it
 * (segment_rejections) and answers with a negative acknowledgement, which
 * the requester counts (refusals_received) and reports: its next hpam_poll
 * returns HPAM_ERR_REJECTED and hpam_last_error() names the request. A
 * store reply must likewise land inside the requester's segment. Returns
 * HPAM_ERR_INVALID for base NULL with len > 0 or a range that wraps. */
int hpam_set_segment(hpam_ep_t* ep, void* base, size_t len);

/* Bulk store (HPAM_xfer): copies len bytes from src to remote_addr in dest's
 * address space (inside dest's segment), then runs the bulk handler there
 * with (remote_addr, len, arg). */
int hpam_store(hpam_ep_t* ep, int dest, unsigned handler, const void* src, size_t len,
               uint64_t remote_addr, uint64_t arg);
int hpam_try_store(hpam_ep_t* ep, int dest, unsigned handler, const void* src, size_t len,
                   uint64_t remote_addr, uint64_t arg);
int hpam_reply_store(hpam_token_t* token, unsigned handler, const void* src, size_t len,
                     uint64_t remote_addr, uint64_t arg);

/* Bulk get: fetches len bytes at remote_addr in dest (inside dest's segment)
 * into local, then runs the bulk handler here (as a reply handler) with
 * (local, len, arg). Where the bytes go and which handler runs are taken
 * from the request, never from the peer's reply. */
int hpam_get(hpam_ep_t* ep, int dest, unsigned handler, uint64_t remote_addr, void* local,
             size_t len, uint64_t arg);

/* Medium request: the gathered bytes travel in the packet and the bulk
 * handler at dest sees them in place (no target address). Used by the BTL. */
int hpam_request_medium(hpam_ep_t* ep, int dest, unsigned handler, const struct iovec* iov,
                        int iovcnt, uint64_t arg);
int hpam_try_request_medium(hpam_ep_t* ep, int dest, unsigned handler, const struct iovec* iov,
                            int iovcnt, uint64_t arg);
/* The small-message fast path (the BTL's): a medium request of a head and
 * a body (either may be empty: len 0, pointer may be NULL), sent now or not
 * at all. HPAM_ERR_BUSY when all D instances to dest are in use and when
 * called from a handler (nothing is sent; it is not a rule violation, just
 * "not now"); otherwise as hpam_try_request_medium. Never polls, whatever
 * poll_on_send says. */
int hpam_send_medium_now(hpam_ep_t* ep, int dest, unsigned handler, const void* head,
                         size_t head_len, const void* body, size_t body_len, uint64_t arg);
/* hpam_send_medium_now whose payload `pack` writes straight into the
 * outbound card block once an instance is free (no copy in between: UCX's
 * am_bcopy). pack(dest, pack_arg) writes at most hpam_max_bulk bytes at
 * dest and returns how many; more breaks the contract and stops the
 * process with a message (the bytes past the block are already written). */
typedef size_t (*hpam_pack_fn)(void* dest, void* arg);
int hpam_send_medium_packed(hpam_ep_t* ep, int dest, unsigned handler, hpam_pack_fn pack,
                            void* pack_arg, uint64_t arg);

/* Serves the network: runs handlers for arrived packets, checks K request
 * descriptors for timeout. Returns the number of packets handled (>= 0),
 * HPAM_ERR_UNREACHABLE once when a peer has been given up on, or
 * HPAM_ERR_REJECTED once when requests of this process were refused by a
 * peer (or answered with a reply that failed its checks) since the last
 * report; hpam_last_error() then names the request. The poll that every
 * send makes (poll_on_send) reports neither: it is left for hpam_poll. */
int hpam_poll(hpam_ep_t* ep);

/* The sending half of hpam_poll, for a process whose user waits on
 * something else (another interface of a transport): launches deferred
 * acknowledgements, sends packets the wire held back whose time has come,
 * checks K request descriptors and resends those timed out. Receives
 * nothing and is not a poll (peers judge liveness by polls); a peer given
 * up on here is reported by the next hpam_poll. HPAM_OK, or
 * HPAM_ERR_RULE from a handler. */
int hpam_resend_due(hpam_ep_t* ep);

int hpam_token_source(const hpam_token_t* token);
/* The same source read in place, without a call, for a handler's own
 * token (never NULL there): a token's source is the int at
 * HPAM_TOKEN_SOURCE_OFFSET bytes (after two pointers), a layout the C API
 * keeps (c_api.cpp asserts it against the core's struct hpam_token). The
 * BTL's handler reads it once per message. */
#define HPAM_TOKEN_SOURCE_OFFSET (2 * sizeof(void*))
static inline int hpam_token_source_in_place(const hpam_token_t* token) {
  return *(const int*)((const char*)token + HPAM_TOKEN_SOURCE_OFFSET);
}
int hpam_in_handler(const hpam_ep_t* ep); /* nonzero while a handler runs */

/* The peer given up on, or -1. */
int hpam_unreachable_peer(const hpam_ep_t* ep);
/* Nonzero once `proc` has been given up on (every peer lost so far, not
 * only the first one hpam_unreachable_peer names). */
int hpam_peer_lost(const hpam_ep_t* ep, int proc);

/* Protocol event counters (HPAM section 7.2 / DESIGN "Protocol counters"). */
typedef struct hpam_counters {
  uint64_t requests_sent, replies_sent, acks_sent;
  uint64_t requests_received, replies_received;
  uint64_t stalls;               /* blocking send waited for a free instance     */
  uint64_t busy_returns;         /* non-blocking send found all D busy           */
  uint64_t hint_misses;          /* hint pointer named a busy instance           */
  uint64_t timeouts;             /* request descriptor found timed out           */
  uint64_t retransmissions;      /* requests resent                              */
  uint64_t duplicates_reflected; /* duplicate request answered from stored reply */
  uint64_t stale_replies;        /* reply with wrong sequence or to free instance*/
  uint64_t crc_failures;         /* packet dropped for bad CRC                   */
  uint64_t key_rejections;       /* packet dropped for wrong protection key      */
  uint64_t malformed;            /* packet dropped: bad header, length, handler  */
  uint64_t overflow_drops;       /* card dropped inbound: no receive cell or block free */
  uint64_t rule_violations;      /* request-reply rule broken by a handler       */
  uint64_t wire_dropped, wire_duplicated, wire_corrupted, wire_reordered, wire_delayed;
  uint64_t segment_rejections; /* stores/gets outside this process's segment, refused */
  uint64_t refusals_received;  /* requests of this process a peer refused      */
  uint64_t busy_peer_waits;    /* give-up time passed on a peer that lives but */
                               /* does not poll (computes): kept waiting        */
  uint64_t acks_piggybacked;   /* acks (in acks_sent) that rode on a request   */
  uint64_t acks_combined;      /* acks (in acks_sent) that went inside another */
                               /* ack's packet (multi_ack)                     */
  uint64_t background_resends; /* requests resent (in retransmissions) by the  */
                               /* background path while the owner made no call */
                               /* (background_resend)                          */
  uint64_t early_resends;      /* requests resent (in retransmissions) before  */
                               /* their timeout: later ones were answered      */
  uint64_t spurious_resends;   /* resent requests answered from their first    */
                               /* copy: the resend was not needed              */
  uint64_t resends_deferred;   /* timeouts that resent nothing: the peer had   */
                               /* not polled since the request was last sent   */
  uint64_t timeout_ns;         /* the timeout a new request gets now: a peer's */
                               /* adaptive one; in the totals, the largest     */
} hpam_counters_t;

int hpam_get_counters(const hpam_ep_t* ep, hpam_counters_t* out);
/* Per-peer counters, for statistics at finalize. */
int hpam_get_peer_counters(const hpam_ep_t* ep, int peer, hpam_counters_t* out);

const char* hpam_strerror(int err);
/* Text of the last setup error or give-up in this process. */
const char* hpam_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* HPAM_AM_H */
