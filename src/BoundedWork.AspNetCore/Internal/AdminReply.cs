using System.Text.Json;
using System.Text.Json.Serialization;
using System.Text.Json.Serialization.Metadata;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// A finished response: status, media type and the serialized JSON body. Both the Kestrel endpoints and the local
/// socket listener write these, so they answer the same requests with the same bytes.
/// </summary>
internal sealed record AdminReply(int Status, string ContentType, byte[] Body, string? Allow = null)
{
    public const string Json = "application/json; charset=utf-8";
    public const string ProblemJson = "application/problem+json; charset=utf-8";

    public static AdminReply Ok<T>(T value, JsonTypeInfo<T> typeInfo) => new(200, Json, JsonSerializer.SerializeToUtf8Bytes(value, typeInfo));

    public static AdminReply Problem(int status, string title, string detail, IReadOnlyDictionary<string, string[]>? errors = null, string? executor = null, string? header = null, string? allow = null, int? errorCount = null, string? queue = null) =>
        new(
            status,
            ProblemJson,
            JsonSerializer.SerializeToUtf8Bytes(new ProblemDocument(TypeOf(status), title, status, detail, errors, executor, header, errorCount, queue), AdminJsonContext.Readable.ProblemDocument),
            allow);

    private static string TypeOf(int status) => status switch
    {
        400 => "https://tools.ietf.org/html/rfc9110#section-15.5.1",
        401 => "https://tools.ietf.org/html/rfc9110#section-15.5.2",
        403 => "https://tools.ietf.org/html/rfc9110#section-15.5.4",
        404 => "https://tools.ietf.org/html/rfc9110#section-15.5.5",
        405 => "https://tools.ietf.org/html/rfc9110#section-15.5.6",
        409 => "https://tools.ietf.org/html/rfc9110#section-15.5.10",
        413 => "https://tools.ietf.org/html/rfc9110#section-15.5.14",
        415 => "https://tools.ietf.org/html/rfc9110#section-15.5.16",
        503 => "https://tools.ietf.org/html/rfc9110#section-15.6.4",
        _ => "about:blank",
    };
}

/// <summary>
/// An RFC 9457 problem details document; <see cref="Errors"/> is keyed by the JSON field (or <c>body</c>) and lists at
/// most <see cref="FieldErrors.MaxListed"/> fields; <see cref="ErrorCount"/>, only when more had problems, counts them all.
/// </summary>
internal sealed record ProblemDocument(
    string Type,
    string Title,
    int Status,
    string Detail,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyDictionary<string, string[]>? Errors,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] string? Executor,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] string? Header,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] int? ErrorCount = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] string? Queue = null);
