using System.Buffers;
using System.Text.Json;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// A durable queue's fleet-wide pause body, <c>{"reason": "downstream outage", "for": "00:10:00", "key": "customer-42"}</c>:
/// <c>reason</c> and <c>for</c> as an executor's pause (<see cref="PauseRequest"/>), <c>key</c> optional (an ordering key
/// to pause alone: 1 to 512 characters, no NUL). A resume's body is empty, <c>{}</c>, or <c>{"key": "customer-42"}</c>.
/// </summary>
internal static class QueuePauseRequest
{
    public const string Key = "key";
    public const int MaxKeyLength = 512;

    private static readonly string[] s_pauseFields = [PauseRequest.Reason, PauseRequest.For, Key];
    private static readonly string[] s_resumeFields = [Key];

    /// <summary>Reads a pause's body: the reason, the duration and the key, or the errors naming each bad field.</summary>
    public static (string? Reason, TimeSpan For, string? Key, FieldErrors Errors) ParsePause(ReadOnlySequence<byte> body)
    {
        var errors = new FieldErrors();
        string? reason = null;
        string? key = null;
        var duration = Timeout.InfiniteTimeSpan;
        if (body.IsEmpty)
        {
            errors[SettingsRequest.Body] = ["The request body is missing: send a JSON object such as {\"reason\": \"downstream outage\", \"for\": \"00:10:00\"} (and \"key\" to pause one ordering key)."];
            return (null, duration, null, errors);
        }

        if (JsonChangeReader.ReadFields(body, s_pauseFields, "the allowed fields are reason, for, key", errors, ReadField) is null)
        {
            return (null, duration, null, errors);
        }

        void ReadField(ref Utf8JsonReader reader, string field)
        {
            switch (field)
            {
                case PauseRequest.Reason when reader.TokenType != JsonTokenType.String:
                    errors[PauseRequest.Reason] = [$"reason must be a string, not {JsonChangeReader.Describe(reader.TokenType)}."];
                    reader.Skip();
                    break;
                case PauseRequest.Reason when !JsonChangeReader.TryGetText(ref reader, out var text):
                    errors[PauseRequest.Reason] = ["reason is not valid UTF-8 text."];
                    break;
                case PauseRequest.Reason:
                    JsonChangeReader.TryGetText(ref reader, out reason);
                    if (BoundedExecutor.GetPauseReasonError(reason) is { } error)
                    {
                        errors[PauseRequest.Reason] = [error];
                        reason = null;
                    }

                    break;
                case PauseRequest.For when SettingsRequest.ReadTimeout(ref reader, field, errors) is { } value:
                    duration = value;
                    break;
                case Key:
                    key = ReadKey(ref reader, errors);
                    break;
            }
        }

        if (reason is null && !errors.ContainsKey(PauseRequest.Reason) && errors.Count == 0)
        {
            errors[PauseRequest.Reason] = ["reason is required: say why, such as {\"reason\": \"downstream outage\"}."];
        }

        return errors.Count == 0 ? (reason, duration, key, errors) : (null, duration, null, errors);
    }

    /// <summary>Reads a resume's body: empty, <c>{}</c>, or the key to resume.</summary>
    public static (string? Key, FieldErrors Errors) ParseResume(ReadOnlySequence<byte> body)
    {
        var errors = new FieldErrors();
        string? key = null;
        if (!body.IsEmpty)
        {
            JsonChangeReader.ReadFields(body, s_resumeFields, "a resume takes only key (send {} or nothing to resume the queue)", errors, (ref Utf8JsonReader reader, string _) => key = ReadKey(ref reader, errors));
        }

        return (errors.Count == 0 ? key : null, errors);
    }

    private static string? ReadKey(ref Utf8JsonReader reader, FieldErrors errors)
    {
        if (reader.TokenType != JsonTokenType.String)
        {
            errors[Key] = [$"key must be a string (an ordering key), not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        if (!JsonChangeReader.TryGetText(ref reader, out var key))
        {
            errors[Key] = ["key is not valid UTF-8 text."];
            return null;
        }

        if (key.Length is 0 or > MaxKeyLength || key.Contains('\0', StringComparison.Ordinal))
        {
            errors[Key] = [$"key must be 1 to {MaxKeyLength} characters without a NUL character (was {key.Length} characters)."];
            return null;
        }

        return key;
    }
}
