using System.Text.RegularExpressions;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// A typed queue's handler could not be constructed from the application's services because a service it needs (or
/// the handler itself) is not registered: a configuration error, not a failure of the item. It is logged
/// (<c>HandlerUnavailable</c>), counted, and the item becomes a dead letter at once, without its retries, since every
/// retry would fail the same way until the application is fixed and restarted.
/// </summary>
internal sealed partial class HandlerUnavailableException : InvalidOperationException
{
    public HandlerUnavailableException(Type handler, string missingService, InvalidOperationException inner)
        : base(
            $"The work queue's handler {handler.Name} cannot be constructed: the service {missingService} is not registered " +
            $"(a configuration error, so the item is not retried; register {missingService} and restart). {inner.Message}",
            inner)
    {
        Handler = handler;
        MissingService = missingService;
    }

    /// <summary>Gets the handler type.</summary>
    public Type Handler { get; }

    /// <summary>Gets the name of the service that is not registered, as the container names it.</summary>
    public string MissingService { get; }

    /// <summary>
    /// Whether <paramref name="exception"/> is the container's "not registered" error ("Unable to resolve service for
    /// type 'X' while attempting to activate 'Y'." or "No service for type 'X' has been registered."), and which
    /// service it names.
    /// </summary>
    public static bool IsMissingService(InvalidOperationException exception, out string missingService)
    {
        var match = MissingServiceMessage().Match(exception.Message);
        missingService = match.Success ? match.Groups["service"].Value : "";
        return match.Success;
    }

    [GeneratedRegex(@"^(Unable to resolve service for type|No service for type) '(?<service>[^']+)'")]
    private static partial Regex MissingServiceMessage();
}
