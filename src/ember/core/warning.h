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

}  // namespace ember
