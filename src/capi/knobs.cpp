// The one knob table. Each row: the knob as users see it (name, unit, range,
// help), the C configuration field it sets, and the core field behind it.
// Defaults are the core's own (endpoint_config{}, deposit::setup{}), but for
// the card type, which the C API chooses (the core takes it as a template
// parameter).
#include "capi/knobs.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "am/packet.hpp"
#include "nic/hamlyn/card_view.hpp"
#include "nic/medusa/card_memory.hpp"
#include "nic/wire/wire.hpp"

namespace hpam::capi {
namespace {

struct c_pair {
  hpam_config_t* am;
  hpam_dep_config_t* dep;
};
struct core_pair {
  am::endpoint_config* am;
  deposit::setup* dep;
};

template <class T>
hpam_knob_value_t value_of(T v) {
  hpam_knob_value_t out{};
  if constexpr (std::is_same_v<T, double>)
    out.r = v;
  else if constexpr (std::is_same_v<T, const char*>)
    out.s = v;
  else
    out.i = static_cast<int64_t>(v);
  return out;
}

template <class T>
T from_value(hpam_knob_value_t v) {
  if constexpr (std::is_same_v<T, double>)
    return v.r;
  else if constexpr (std::is_same_v<T, const char*>)
    return v.s;
  else if constexpr (std::is_same_v<T, bool>)
    return v.i != 0;
  else
    return static_cast<T>(v.i);
}

template <class M>
struct member_of;
template <class T, class C>
struct member_of<T C::*> {
  using owner = C;
};

// A field reached through a path of members: field<&A::b, &B::c> is a.b.c.
template <auto First, auto... Rest>
struct field {
  using owner = typename member_of<decltype(First)>::owner;
  template <class Obj>
  static auto& of(Obj& o) {
    return ((o.*First).*....*Rest);
  }
  template <class Pair>
  static auto* in(const Pair& p) {
    if constexpr (std::is_same_v<owner, std::remove_pointer_t<decltype(p.am)>>)
      return p.am;
    else
      return p.dep;
  }
  template <class Pair>
  static hpam_knob_value_t get(const Pair& p) {
    auto* o = in(p);
    return o ? value_of(of(*o)) : hpam_knob_value_t{};
  }
  template <class Pair>
  static void set(const Pair& p, hpam_knob_value_t v) {
    if (auto* o = in(p)) of(*o) = from_value<std::remove_reference_t<decltype(of(*o))>>(v);
  }
};

// Where a knob lives, in field units (the same in the C and core structs).
struct binding {
  hpam_knob_value_t (*c_get)(const c_pair&);
  void (*c_set)(const c_pair&, hpam_knob_value_t);
  hpam_knob_value_t (*core_get)(const core_pair&);
  void (*core_set)(const core_pair&, hpam_knob_value_t);
  bool in_am, in_dep;  // which C configuration holds it
};

template <class F>
constexpr bool in_am = std::is_same_v<typename F::owner, hpam_config_t>;

template <class CField, class CoreField>
constexpr binding bind() {
  return {CField::template get<c_pair>,
          CField::template set<c_pair>,
          CoreField::template get<core_pair>,
          CoreField::template set<core_pair>,
          in_am<CField>,
          !in_am<CField>};
}

// A knob set in two places at once (the AM and the deposit configuration);
// read from whichever of the two is given.
template <class C1, class Core1, class C2, class Core2>
constexpr binding bind_both() {
  return {[](const c_pair& p) { return p.am ? C1::get(p) : C2::get(p); },
          [](const c_pair& p, hpam_knob_value_t v) { C1::set(p, v), C2::set(p, v); },
          [](const core_pair& p) { return p.am ? Core1::get(p) : Core2::get(p); },
          [](const core_pair& p, hpam_knob_value_t v) { Core1::set(p, v), Core2::set(p, v); },
          true,
          true};
}

// A knob that exists only in the C configuration (the core takes the card
// type as a template parameter, chosen by the C API).
template <class CField>
constexpr binding bind_c_only() {
  return {CField::template get<c_pair>,
          CField::template set<c_pair>,
          [](const core_pair&) { return hpam_knob_value_t{}; },
          [](const core_pair&, hpam_knob_value_t) {},
          in_am<CField>,
          !in_am<CField>};
}

// A rule shared with other knobs: returns what is valid ("range is ...",
// "values are ...") when v (in the field's unit) breaks it, else empty.
using rule_fn = std::string (*)(hpam_knob_value_t v, const hpam_config_t& am);

struct knob {
  hpam_knob_info_t info;
  int64_t scale;  // field units per knob unit
  binding where;
  rule_fn rule;
  const char* choice_default = nullptr;  // CHOICE knobs: the core has no field for them
};

using am_cfg = hpam_config_t;
using dep_cfg = hpam_dep_config_t;
using core = am::endpoint_config;
using card = nic::card_setup;
using faults = nic::fault_config;

// The longest time a time knob takes: an hour.
constexpr int64_t hour_ms = 3'600'000, hour_us = hour_ms * 1'000;

constexpr hpam_knob_info_t whole(const char* name, const char* field, const char* unit, int level,
                                 int64_t min, int64_t max, const char* help) {
  return {name, field, help, unit, HPAM_KNOB_UNSIGNED, level, min, max, 0, 0, nullptr};
}
constexpr hpam_knob_info_t power2(const char* name, const char* field, int level, int64_t min,
                                  int64_t max, const char* help) {
  return {name, field, help, "bytes", HPAM_KNOB_POWER2, level, min, max, 0, 0, nullptr};
}
constexpr hpam_knob_info_t flag(const char* name, const char* field, int level, const char* help) {
  return {name, field, help, "", HPAM_KNOB_BOOL, level, 0, 1, 0, 0, nullptr};
}
constexpr hpam_knob_info_t probability(const char* name, const char* field, const char* help) {
  return {name, field, help, "", HPAM_KNOB_REAL, 7, 0, 0, 0.0, 1.0, nullptr};
}
constexpr hpam_knob_info_t choice(const char* name, const char* field, int level,
                                  const char* choices, const char* help) {
  return {name, field, help, "", HPAM_KNOB_CHOICE, level, 0, 0, 0, 0, choices};
}

// v in the field's unit (ns).
std::string timeout_within_give_up(hpam_knob_value_t v, const hpam_config_t& am) {
  if (static_cast<uint64_t>(v.i) <= am.give_up_ns) return {};
  return "range is [1, " + std::to_string(am.give_up_ns / 1000) + "] us (at most the give-up time)";
}

std::string corruption_needs_crc(hpam_knob_value_t v, const hpam_config_t& am) {
  if (v.r == 0 || am.crc_check) return {};
  return "values are 0 while crc_check is off (a corrupted packet would be taken for a good one)";
}

// constexpr: the table is constant-initialized, so that it may be walked
// before this library's dynamic initialization has run (the UCX transport
// builds its UCX_HPAM_* table from a library constructor).
constexpr knob table[] = {
    {choice("nic", "nic", 4, "medusa,hamlyn",
            "NIC model under the active messages: medusa (HPAM FIFOs) or hamlyn "
            "(sender-managed regions)"),
     1, bind_c_only<field<&am_cfg::nic>>(), nullptr, default_nic},
    {whole("depth", "depth", "", 4, 1, am::max_depth,
           "D, request-reply instances per peer (Medusa: 4)"),
     1, bind<field<&am_cfg::depth>, field<&core::depth>>(), nullptr},
    {power2("block_size", "block_size", 4, 256, 65536, "Card block size = largest packet"), 1,
     bind<field<&am_cfg::block_size>, field<&core::card, &card::block_size>>(), nullptr},
    {whole("rx_blocks", "rx_blocks", "", 6, 0, nic::medusa::max_blocks,
           "Inbound card blocks; 0 = 2*(P-1)*(D+1): the worst case 2*(P-1)*D and two per peer for "
           "answers that outrun the release of a block (fewer for experiments)"),
     1, bind<field<&am_cfg::rx_blocks>, field<&core::rx_blocks>>(), nullptr},
    {whole("give_up_ms", "give_up_ns", "ms", 4, 1, hour_ms,
           "A peer silent this long is declared unreachable if its process exited or is "
           "stopped, or it polls without answering (one that computes is waited for)"),
     1'000'000, bind<field<&am_cfg::give_up_ns>, field<&core::give_up_ns>>(), nullptr},
    {whole("timeout_us", "timeout_ns", "us", 5, 1, hour_us,
           "First retransmission timeout (at most give_up_ms), doubling on each retransmission up "
           "to backoff_limit times; with adaptive_timeout the ceiling of the adaptive one (and its "
           "value until a round trip is measured). A request its peer cannot have read, or whose "
           "answer may wait in my card, is not resent (counted resends_deferred)"),
     1'000, bind<field<&am_cfg::timeout_ns>, field<&core::timeout_ns>>(), timeout_within_give_up},
    {flag("adaptive_timeout", "adaptive_timeout", 5,
          "When the wire can lose packets, each peer's retransmission timeout follows its "
          "measured round trip (RFC 6298: smoothed RTT + 4 deviations), between timeout_min_us "
          "and timeout_us; on every wire, a timeout resends only to a peer that has polled since "
          "the send; off: the paper's timer, timeout_us fixed, every timeout resends"),
     1, bind<field<&am_cfg::adaptive_timeout>, field<&core::adaptive_timeout>>(), nullptr},
    {whole("timeout_min_us", "timeout_min_ns", "us", 6, 1, hour_us,
           "The adaptive timeout's floor (above timeout_us it is timeout_us): a peer descheduled "
           "for a while is not flooded with resends"),
     1'000, bind<field<&am_cfg::timeout_min_ns>, field<&core::timeout_min_ns>>(), nullptr},
    {flag("early_resend", "early_resend", 5,
          "When the wire can lose packets, an ordered request (the BTL's) is resent at once, "
          "before its timeout, when a request sent 3 after it has been answered; a resend answered "
          "from the first copy is counted spurious_resends"),
     1, bind<field<&am_cfg::early_resend>, field<&core::early_resend>>(), nullptr},
    {whole("backoff_limit", "backoff_limit", "", 6, 0, 30,
           "Most doublings of the retransmission timeout"),
     1, bind<field<&am_cfg::backoff_limit>, field<&core::backoff_limit>>(), nullptr},
    {choice("background_resend", "background_resend", 5, "auto,on,off",
            "A thread resends lost packets while their sender makes no call (computes, or spins "
            "on shared memory); auto: only when the wire can lose or hold back packets (a drop, "
            "corrupt, reorder or delay fault, or rx_blocks below its default); its resends are "
            "counted background_resends"),
     1, bind_c_only<field<&am_cfg::background_resend>>(), nullptr, "auto"},
    {whole("checks_per_poll", "checks_per_poll", "", 6, 1, 65536,
           "K, request descriptors checked for timeout per poll"),
     1, bind<field<&am_cfg::checks_per_poll>, field<&core::checks_per_poll>>(), nullptr},
    {whole("receive_budget", "receive_budget", "", 6, 1, 65536,
           "Most packets one poll handles while packets keep coming (on a wire that cannot "
           "lose, a poll after one that took nothing takes one); 1 returns after each packet"),
     1, bind<field<&am_cfg::receive_budget>, field<&core::receive_budget>>(), nullptr},
    {flag("defer_acks", "defer_acks", 5,
          "Launch empty acknowledgements after the next send or poll instead of at once"),
     1, bind<field<&am_cfg::defer_acks>, field<&core::defer_acks>>(), nullptr},
    {flag("piggyback_acks", "piggyback_acks", 5,
          "A deferred acknowledgement rides on the next request to its peer (an 8-byte "
          "trailer) instead of a packet of its own"),
     1, bind<field<&am_cfg::piggyback_acks>, field<&core::piggyback_acks>>(), nullptr},
    {flag("multi_ack", "multi_ack", 5,
          "Deferred acknowledgements to one peer go out together in one packet, gathered "
          "while a stream arrives (with defer_acks)"),
     1, bind<field<&am_cfg::multi_ack>, field<&core::multi_ack>>(), nullptr},
    {choice("acks_wait_when_idle", "acks_wait_when_idle", 5, "auto,on,off",
            "A poll that finds nothing leaves deferred acknowledgements waiting for a request to "
            "ride on (until ack_threshold wait for one peer, or 16 polls) instead of sending "
            "them alone; auto: when the job's processes outnumber the node's online cores, so "
            "that a poll finding nothing gives its core to another process and an ack sent "
            "alone costs time on a core others wait for (with defer_acks)"),
     1, bind_c_only<field<&am_cfg::acks_wait_when_idle>>(), nullptr, "auto"},
    {flag("key_check", "key_check", 5, "Check the job's protection key on every arriving packet"),
     1, bind<field<&am_cfg::key_check>, field<&core::key_check>>(), nullptr},
    {flag("crc_check", "crc_check", 5,
          "Compute and check a CRC32C on every packet the wire can corrupt (fault_corrupt above 0; "
          "on a clean wire no bit can flip, and the cards' CRC, hardware on the real ones, is "
          "skipped; key and bounds checks stay on)"),
     1, bind<field<&am_cfg::crc_check>, field<&core::card, &card::crc>>(), nullptr},
    {flag("direct_tx", "direct_tx", 5,
          "Medusa: an idle card engine sends a launched block at once instead of taking it "
          "through TX_READY and TX_FREE"),
     1, bind<field<&am_cfg::direct_tx>, field<&core::card, &card::direct_tx>>(), nullptr},
    {flag("by_reference", "by_reference", 5,
          "Medusa: a packet longer than an RX_READY cell, on a wire without faults, is read by "
          "its receiver in the sender's block (the card's DMA at no cost to the sending host) "
          "instead of copied into a block of the receiver's; Hamlyn: the same for a packet "
          "longer than 4 KiB, on a wire without faults or CRC"),
     1, bind<field<&am_cfg::by_reference>, field<&core::by_reference>>(), nullptr},
    {flag("headless_cells", "headless_cells", 5,
          "Medusa: a packet carried in its RX_READY cell, on a wire without faults, leaves its "
          "16-byte wire header out of the cell (the entry names its source and length): a "
          "64-byte packet then fills one cache line with the cell's head instead of two. "
          "Hamlyn: each packet, on a wire without faults, leaves its wire header unwritten and "
          "unread (the notification names its source and length)"),
     1, bind<field<&am_cfg::headless_cells>, field<&core::headless_cells>>(), nullptr},
    {power2("rx_ready_cell", "rx_ready_cell", 6, nic::medusa::min_rx_ready_cell,
            nic::medusa::max_rx_ready_cell,
            "Medusa: bytes per RX_READY cell; a packet of up to this less 16 bytes travels in the "
            "cell beside its entry instead of in its block, a headless one (headless_cells) of up "
            "to this many (16: every packet in its block)"),
     1, bind<field<&am_cfg::rx_ready_cell>, field<&core::card, &card::rx_ready_cell>>(), nullptr},
    {whole("notify_inline", "notify_inline", "bytes", 6, 0,
           nic::hamlyn::max_notification_inline_bytes,
           "Hamlyn: a packet of up to this many bytes travels in its notification entry instead "
           "of its block (inline delivery; entries of 128 bytes up to 96, 256 up to 224, 512 "
           "beyond; 0: every packet in its block)"),
     1, bind<field<&am_cfg::notify_inline>, field<&core::card, &card::notify_inline>>(), nullptr},
    {probability("fault_drop", "fault_drop", "Probability that the emulated wire drops a packet"),
     1, bind<field<&am_cfg::fault_drop>, field<&core::card, &card::faults, &faults::drop>>(),
     nullptr},
    {probability("fault_duplicate", "fault_duplicate",
                 "Probability that the wire delivers a packet twice"),
     1,
     bind<field<&am_cfg::fault_duplicate>, field<&core::card, &card::faults, &faults::duplicate>>(),
     nullptr},
    {probability("fault_corrupt", "fault_corrupt",
                 "Probability that the wire flips bits of a packet (needs crc_check)"),
     1, bind<field<&am_cfg::fault_corrupt>, field<&core::card, &card::faults, &faults::corrupt>>(),
     corruption_needs_crc},
    {probability("fault_reorder", "fault_reorder",
                 "Probability that the wire holds a packet back behind the next"),
     1, bind<field<&am_cfg::fault_reorder>, field<&core::card, &card::faults, &faults::reorder>>(),
     nullptr},
    {probability("fault_delay", "fault_delay",
                 "Probability that the wire delays a packet by fault_delay_us"),
     1, bind<field<&am_cfg::fault_delay>, field<&core::card, &card::faults, &faults::delay>>(),
     nullptr},
    {whole("fault_delay_us", "fault_delay_ns", "us", 7, 0, nic::wire::max_delay_ns / 1'000,
           "How long a delayed packet is held (bounded far below the sequence wrap time)"),
     1'000,
     bind<field<&am_cfg::fault_delay_ns>, field<&core::card, &card::faults, &faults::delay_ns>>(),
     nullptr},
    {whole("fault_seed", "fault_seed", "", 7, 0, INT64_MAX,
           "Seed of the wire's fault generator (mixed with the process index)"),
     1, bind<field<&am_cfg::fault_seed>, field<&core::card, &card::faults, &faults::seed>>(),
     nullptr},
    {whole("attach_timeout_ms", "attach_timeout_ms", "ms", 8, 1, hour_ms,
           "How long to wait for a peer's card to appear"),
     1,
     bind_both<field<&am_cfg::attach_timeout_ms>, field<&core::card, &card::attach_timeout_ms>,
               field<&dep_cfg::attach_timeout_ms>, field<&deposit::setup::attach_timeout_ms>>(),
     nullptr},
    {power2("packet_size", "packet_size", 5, 256, 65536,
            "Packet size of sender-based deposits: one cross-memory call or one fallback "
            "packet each"),
     1, bind<field<&dep_cfg::packet_size>, field<&deposit::setup::packet_size>>(), nullptr},
    {whole("max_registrations", "max_registrations", "", 5, 16, nic::hamlyn::max_slot_count,
           "Memory registrations (Hamlyn slots) alive at once; an MPI window takes one, two on "
           "a node's first rank"),
     1, bind<field<&dep_cfg::max_registrations>, field<&deposit::setup::max_registrations>>(),
     nullptr},
    {flag("cross_memory", "cross_memory", 6,
          "Deposit by cross-memory attach when the kernel allows it (off: packets the owner "
          "deposits when it polls)"),
     1, bind<field<&dep_cfg::cross_memory>, field<&deposit::setup::cross_memory>>(), nullptr},
    {whole("batch_limit", "batch_limit", "bytes", 6, 0, nic::hamlyn::max_direct_io_limit,
           "Puts and gets up to this size by cross-memory attach wait and go together, one "
           "system call per destination, at the next progress or flush (0: each at once)"),
     1, bind<field<&dep_cfg::batch_limit>, field<&deposit::setup::batch_limit>>(), nullptr},
    {whole("card_memory", "card_memory", "bytes", 6, 65536, uint64_t{1} << 40,
           "Card memory of the deposit card: memory the transport allocates for users (UCX "
           "mem_alloc, hpam_dep_allocate), written and updated by peers directly; once used up, "
           "allocations get private memory"),
     1, bind<field<&dep_cfg::card_memory>, field<&deposit::setup::card_memory>>(), nullptr},
};
constexpr size_t knob_count = sizeof table / sizeof table[0];

// The core's defaults, once.
const core_pair& core_defaults() {
  static am::endpoint_config am_defaults;
  static deposit::setup dep_defaults;
  static const core_pair pair{&am_defaults, &dep_defaults};
  return pair;
}

hpam_knob_value_t scaled_down(const knob& k, hpam_knob_value_t field_value) {
  if (k.info.type != HPAM_KNOB_REAL && k.info.type != HPAM_KNOB_CHOICE) field_value.i /= k.scale;
  return field_value;
}
hpam_knob_value_t scaled_up(const knob& k, hpam_knob_value_t v) {
  if (k.info.type != HPAM_KNOB_REAL && k.info.type != HPAM_KNOB_CHOICE) v.i *= k.scale;
  return v;
}

hpam_knob_value_t default_of(const knob& k) {
  if (k.info.type == HPAM_KNOB_CHOICE) return value_of(k.choice_default);
  return scaled_down(k, k.where.core_get(core_defaults()));
}

bool one_of(const char* word, const char* choices) {
  if (!word) return false;
  const size_t n = std::strlen(word);
  for (const char* c = choices; *c;) {
    const char* end = std::strchr(c, ',');
    const size_t len = end ? static_cast<size_t>(end - c) : std::strlen(c);
    if (len == n && std::strncmp(c, word, n) == 0) return true;
    c += len + (end ? 1 : 0);
  }
  return false;
}

// "a,b,c" as "a, b, c".
std::string listed(const char* choices) {
  std::string out;
  for (const char* c = choices; *c; ++c) out += *c == ',' ? std::string(", ") : std::string(1, *c);
  return out;
}

bool is_power_of_two(int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

std::string number(int64_t v, int64_t scale) {
  return std::to_string(v * scale);
}
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// What is valid for k ("range is ...", "values are ..."), or empty when v
// is. v and the numbers shown are in units of 1/scale of the knob's unit
// (scale 1: the knob's unit; the knob's scale: its field's unit).
std::string what_is_valid(const knob& k, hpam_knob_value_t v, const hpam_config_t* am,
                          int64_t scale) {
  const hpam_knob_info_t& i = k.info;
  switch (i.type) {
    case HPAM_KNOB_CHOICE:
      if (one_of(v.s, i.choices)) break;
      return "values are " + listed(i.choices);
    case HPAM_KNOB_REAL:
      if (v.r >= i.real_min && v.r <= i.real_max) break;
      return "range is [" + number(i.real_min) + ", " + number(i.real_max) + "]";
    case HPAM_KNOB_POWER2:
      if (v.i >= i.min && v.i <= i.max && is_power_of_two(v.i)) break;
      return "values are powers of two in [" + number(i.min, scale) + ", " + number(i.max, scale) +
             "]";
    default:
      if (v.i >= i.min * scale && v.i <= i.max * scale) break;
      return "range is [" + number(i.min, scale) + ", " + number(i.max, scale) + "]";
  }
  if (!am || !k.rule) return "";
  if (i.type != HPAM_KNOB_REAL && i.type != HPAM_KNOB_CHOICE) v.i *= k.scale / scale;
  return k.rule(v, *am);
}

std::string display_name(const knob& k, hpam_knob_style_t style) {
  switch (style) {
    case HPAM_KNOB_STYLE_MCA:
      return std::string("MCA parameter btl_hpam_") + k.info.name;
    case HPAM_KNOB_STYLE_UCX: {
      std::string n = std::string("UCX_HPAM_") + k.info.name;
      for (char& ch : n) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      return n;
    }
    default:
      return k.info.field;
  }
}

// The problem with v for k, in the style's names and units (v in the field's
// unit for the field style, else in the knob's); empty if none.
std::string problem(const knob& k, hpam_knob_value_t v, const hpam_config_t* am,
                    hpam_knob_style_t style) {
  const int64_t scale = style == HPAM_KNOB_STYLE_FIELD ? k.scale : 1;
  const std::string valid = what_is_valid(k, v, am, scale);
  if (valid.empty()) return {};
  const std::string shown = k.info.type == HPAM_KNOB_CHOICE ? (v.s ? v.s : "(null)")
                            : k.info.type == HPAM_KNOB_REAL ? number(v.r)
                                                            : number(v.i, 1);
  return "invalid " + display_name(k, style) + " = " + shown + ": valid " + valid;
}

// Every knob of one C configuration, in table order: the first problem.
template <class Config>
std::string check_all(const Config& cfg, const hpam_config_t* am) {
  constexpr bool is_am = std::is_same_v<Config, hpam_config_t>;
  Config copy = cfg;
  c_pair p{};
  if constexpr (is_am)
    p.am = &copy;
  else
    p.dep = &copy;
  for (const knob& k : table) {
    if (is_am ? !k.where.in_am : !k.where.in_dep) continue;
    const hpam_knob_value_t v = k.where.c_get(p);
    if (k.info.type == HPAM_KNOB_CHOICE && !v.s) continue;  // not set: the default applies
    std::string err = problem(k, v, am, HPAM_KNOB_STYLE_FIELD);
    if (!err.empty()) return err;
  }
  return {};
}

}  // namespace

am::endpoint_config to_endpoint_config(const hpam_config_t& c) {
  am::endpoint_config e;
  hpam_config_t copy = c;
  const c_pair from{&copy, nullptr};
  const core_pair to{&e, nullptr};
  for (const knob& k : table)
    if (k.where.in_am) k.where.core_set(to, k.where.c_get(from));
  e.card.job = c.job ? c.job : "";
  e.card.nprocs = c.nprocs;
  e.card.my_proc = c.my_proc;
  e.key = c.key;
  e.ordered = c.ordered != 0;
  // The cards computed and checked their CRC in hardware, at no cost to the
  // host: the emulation pays for it only where it protects something, a
  // wire that can flip bits (every process of a job must agree: the cards
  // compare their CRC flag when they attach).
  e.card.crc = e.card.crc && e.card.faults.corrupt > 0;
  e.acks_wait_when_idle = acks_wait_when_idle(c, sysconf(_SC_NPROCESSORS_ONLN));
  return e;
}

bool acks_wait_when_idle(const hpam_config_t& c, long online_cores) {
  const std::string mode = c.acks_wait_when_idle ? c.acks_wait_when_idle : "auto";
  if (mode != "auto") return mode == "on";
  return online_cores > 0 && c.nprocs > online_cores;
}

deposit::setup to_deposit_setup(const hpam_dep_config_t& c) {
  deposit::setup s;
  hpam_dep_config_t copy = c;
  const c_pair from{nullptr, &copy};
  const core_pair to{nullptr, &s};
  for (const knob& k : table)
    if (k.where.in_dep) k.where.core_set(to, k.where.c_get(from));
  s.job = c.job ? c.job : "";
  s.nprocs = c.nprocs;
  s.my_proc = c.my_proc;
  return s;
}

std::string check_config(const hpam_config_t& cfg) {
  return check_all(cfg, &cfg);
}
std::string check_config(const hpam_dep_config_t& cfg) {
  return check_all(cfg, nullptr);
}

void set_defaults(hpam_config_t* am, hpam_dep_config_t* dep) {
  const c_pair p{am, dep};
  for (const knob& k : table) k.where.c_set(p, scaled_up(k, default_of(k)));
}

}  // namespace hpam::capi

using hpam::capi::table;

extern "C" {

size_t hpam_knob_count(void) {
  return hpam::capi::knob_count;
}

const hpam_knob_info_t* hpam_knob_info(size_t i) {
  return i < hpam::capi::knob_count ? &table[i].info : nullptr;
}

int hpam_knob_find(const char* name) {
  for (size_t i = 0; name && i < hpam::capi::knob_count; ++i)
    if (std::strcmp(table[i].info.name, name) == 0) return static_cast<int>(i);
  return -1;
}

hpam_knob_value_t hpam_knob_get(const hpam_config_t* am, const hpam_dep_config_t* dep, size_t i) {
  if (i >= hpam::capi::knob_count) return {};
  const hpam::capi::c_pair p{const_cast<hpam_config_t*>(am), const_cast<hpam_dep_config_t*>(dep)};
  return hpam::capi::scaled_down(table[i], table[i].where.c_get(p));
}

void hpam_knob_set(hpam_config_t* am, hpam_dep_config_t* dep, size_t i, hpam_knob_value_t v) {
  if (i >= hpam::capi::knob_count) return;
  table[i].where.c_set({am, dep}, hpam::capi::scaled_up(table[i], v));
}

hpam_knob_value_t hpam_knob_default(size_t i) {
  return i < hpam::capi::knob_count ? hpam::capi::default_of(table[i]) : hpam_knob_value_t{};
}

int hpam_knob_check(size_t i, hpam_knob_value_t v, const hpam_config_t* am,
                    const hpam_dep_config_t*, hpam_knob_style_t style, char* msg, size_t len) {
  if (i >= hpam::capi::knob_count) return HPAM_ERR_INVALID;
  const std::string err = hpam::capi::problem(table[i], v, am, style);
  if (err.empty()) return HPAM_OK;
  if (msg && len) std::snprintf(msg, len, "%s", err.c_str());
  return HPAM_ERR_INVALID;
}

}  // extern "C"
