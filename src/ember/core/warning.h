#pragma once
// ember::warn: a message about something that works but is probably not what the user
// meant (tracing a model in train mode, a graph recompiled too often). The default handler
// prints "[ember warning] ..." to stderr; set_warning_handler replaces it (tests capture
// warnings this way; a server routes them to its log).

#include <functional>
#include <string>

namespace ember {

using WarningHandler = std::function<void(const std::string& message)>;

void warn(const std::string& message);
// Installs handler for every thread and returns the previous one; an empty handler
// restores the default (stderr).
WarningHandler set_warning_handler(WarningHandler handler);
// Warnings ember gives once per process (warn_once) are given every time while this is
// set (libtorch's c10::Warning::set_warnAlways).
void set_warn_always(bool always);
bool warn_always();
// warn(message) the first time `flag` is seen clear (it is then set), or always under
// set_warn_always(true).
void warn_once(bool& flag, const std::string& message);

}  // namespace ember
