using System.Buffers;
using System.Text.Json;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// A pause's body, <c>{"reason": "downstream outage", "for": "00:10:00"}</c>: <c>reason</c> required (the core's rule: 1
/// to 200 characters, no control characters), <c>for</c> optional (the console's duration format, at most the core's
/// <see cref="BoundedExecutor.MaxPauseDuration"/>, or <c>"infinite"</c>: until resumed). A resume's body is empty or
/// <c>{}</c>.
/// </summary>
internal static class PauseRequest
{
    public const string Reason = "reason";
    public const string For = "for";
    public const int MaxBodyBytes = 4 * 1024;

    private static readonly string[] s_fields = [Reason, For];

    /// <summary>Reads a pause's body; the reason and the duration, or the errors naming each bad field.</summary>
    public static (string? Reason, TimeSpan For, FieldErrors Errors) ParsePause(ReadOnlySequence<byte> body)
    {
        var errors = new FieldErrors();
        string? reason = null;
        var duration = Timeout.InfiniteTimeSpan;
        if (body.IsEmpty)
        {
            errors[SettingsRequest.Body] = ["The request body is missing: send a JSON object such as {\"reason\": \"downstream outage\", \"for\": \"00:10:00\"}."];
            return (null, duration, errors);
        }

        if (JsonChangeReader.ReadFields(body, s_fields, "the allowed fields are reason, for", errors, ReadField) is null)
        {
            return (null, duration, errors);
        }

        void ReadField(ref Utf8JsonReader reader, string field)
        {
            switch (field)
            {
                case Reason when reader.TokenType != JsonTokenType.String:
                    errors[Reason] = [$"reason must be a string, not {JsonChangeReader.Describe(reader.TokenType)}."];
                    reader.Skip();
                    break;
                case Reason when !JsonChangeReader.TryGetText(ref reader, out var text):
                    errors[Reason] = ["reason is not valid UTF-8 text."];
                    break;
                case Reason:
                    JsonChangeReader.TryGetText(ref reader, out reason);
                    if (BoundedExecutor.GetPauseReasonError(reason) is { } error)
                    {
                        errors[Reason] = [error];
                        reason = null;
                    }

                    break;
                case For when SettingsRequest.ReadTimeout(ref reader, field, errors) is { } value:
                    duration = value;
                    break;
            }
        }

        if (reason is null && !errors.ContainsKey(Reason) && errors.Count == 0)
        {
            errors[Reason] = ["reason is required: say why, such as {\"reason\": \"downstream outage\"}."];
        }

        return (errors.Count == 0 ? reason : null, duration, errors);
    }

    /// <summary>Reads a resume's body: empty or an object without fields.</summary>
    public static FieldErrors ParseResume(ReadOnlySequence<byte> body)
    {
        var errors = new FieldErrors();
        if (!body.IsEmpty)
        {
            JsonChangeReader.ReadFields(body, [], "a resume takes no fields (send {} or nothing)", errors, static (ref Utf8JsonReader reader, string _) => reader.Skip());
        }

        return errors;
    }
}
